"""Performance benchmarks: wall-clock overhead against PPO, the bank's speed and recall, Ray scale-out.

Also the trace of one env step through the library's files (``python -m benchmarks.perf.trace_step``).
"""
