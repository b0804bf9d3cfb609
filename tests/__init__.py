"""The test suite (a package, so its conftest does not clash with docs/conftest.py)."""
