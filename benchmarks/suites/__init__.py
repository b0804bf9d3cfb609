"""The learning suites: environments, arms, seeds and budgets; the trials suites and their families.

Also the README's demo (``python -m benchmarks.suites.demo``, ``make demo``), the scripted
MiniHack demonstrations a suite can start from, and the Meta-World calibration whose PPO
setting the ML1 family trains with.
"""
