"""The benchmarks: ``python -m benchmarks SUITE`` runs a suite into docs/results/SUITE.json (benchmarks/__main__.py)."""
