"""Benchmarks of Complementary RL against vanilla PPO (scripts; never imported by the library).

The modules sit in folders by role (``benchmarks/README.md`` lists each module):

* :mod:`benchmarks.harness`: what runs and records: the runner (``crl-bench``), one run, the
  worker pool, the result files, the hyperparameters, the training callbacks;
* :mod:`benchmarks.suites`: the learning suites, their arms and families, the README's demo;
* :mod:`benchmarks.studies`: one-question studies, each with its own command and result file;
* :mod:`benchmarks.perf`: performance benchmarks: wall-clock overhead, the bank, Ray scale-out;
* :mod:`benchmarks.reporting`: the report (``crl-report``, ``docs/benchmarks.md``), the
  comparisons, the targets, the statistics, and the hand-written ``analysis.md``.

Data stays at the top: ``hyperparams/`` (the rl-zoo-style PPO settings per env) and
``results/`` (the result files every module above writes or reads).
"""
