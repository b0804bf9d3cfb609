"""What runs and records: the runner (``crl-bench``), one run, the worker pool, result files, hyperparameters.

Also the training callbacks that record curves and the bank's contents, and the sync-mode
equivalence check (``python -m benchmarks.harness.equivalence``) that a behaviour-preserving
change leaves every run identical.
"""
