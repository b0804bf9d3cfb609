"""The report: result files into ``docs/benchmarks.md`` (``crl-report``), tables, figures, targets, CIs.

``analysis.md`` beside these modules is the hand-written analysis the report puts before its
tables; :mod:`.results_reading` and :mod:`.stats` are what the report and the comparisons read.
"""
