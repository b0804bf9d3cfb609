"""Benchmarks of Complementary RL against vanilla PPO (scripts; never imported by the library)."""
