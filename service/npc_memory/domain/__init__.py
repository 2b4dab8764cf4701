"""The memory model, scoring and write rules: pure, no I/O."""
