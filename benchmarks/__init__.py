"""Standalone benchmarks of the write path: ``python -m benchmarks.dedup``, ``python -m benchmarks.write``."""
