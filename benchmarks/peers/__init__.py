"""The trials benchmarks' peers: baselines, not parts of the method (retrieve-and-play, RL^2's meta-episodes)."""
