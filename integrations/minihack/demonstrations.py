"""Scripted demonstrations of MiniHack navigation tasks, in the observation keys of training."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gymnasium import spaces

from experience_wrappers.validators import check_int
from integrations.demos import Demonstration, record_demonstrations

from .checks import check_observation_keys
from .envs import DEFAULT_OBSERVATION_KEYS, make_minihack_env
from .scripted import NAVIGATOR_KEYS, MapNavigator

__all__ = ["scripted_demonstrations"]


def scripted_demonstrations(env_id: str, n_episodes: int, seed: int = 0,
                            observation_keys: Sequence[str] = DEFAULT_OBSERVATION_KEYS,
                            max_attempts: int | None = None, **env_kwargs: Any) -> list[Demonstration]:
    """Record ``n_episodes`` successful :class:`MapNavigator` episodes of ``env_id``.

    The env is made with ``observation_keys`` plus the keys the navigator reads; the
    demonstrations keep only the observations of an env made with ``observation_keys``
    (and the same ``env_kwargs``), so they fit the env that will ingest them. Episode
    ``i`` is reset with seed ``seed + i`` (failed attempts use up seeds too).

    Args:
        env_id: a MiniHack navigation task (Room, MazeWalk, KeyRoom...).
        n_episodes: how many successful demonstrations to return.
        seed: seed of the first episode and of the navigator's random moves.
        observation_keys: the observation keys of the training env.
        max_attempts: episodes to try at most (default ``10 * n_episodes``).
        **env_kwargs: passed to :func:`make_minihack_env`.

    Raises:
        RuntimeError: fewer than ``n_episodes`` attempts succeeded (a task the
            navigator cannot solve, such as River's boulders).

    >>> demos = scripted_demonstrations("MiniHack-Room-5x5-v0", 2, seed=0)
    >>> len(demos), sorted(demos[0].observations), all(d.success for d in demos)
    (2, ['blstats', 'glyphs_crop', 'inv_glyphs', 'last_action'], True)
    """
    n_episodes = check_int("n_episodes", n_episodes, minimum=1)
    keys = check_observation_keys(observation_keys, None)  # a str, no keys or unknown ones: named (then by the env)
    record_keys = keys + tuple(k for k in NAVIGATOR_KEYS if k not in keys)
    env = make_minihack_env(env_id, observation_keys=record_keys, seed=seed, **env_kwargs)
    try:
        try:
            demos = record_demonstrations(env, MapNavigator(env, seed), n_episodes, seed=seed,
                                          only_successful=True, max_attempts=max_attempts)
        except RuntimeError as exc:  # too few successes within the attempts allowed
            raise RuntimeError(f"the scripted navigator on {env_id}: {exc} (if max_attempts was ample, it cannot "
                               "solve this task reliably)") from None
        obs_space = env.observation_space
        assert isinstance(obs_space, spaces.Dict)  # MiniHack's observations: a Dict of the keys asked for
        kept = set(obs_space.spaces) - (set(record_keys) - set(keys))
    finally:
        env.close()
    for d in demos:
        d.observations = {k: v for k, v in d.observations.items() if k in kept}
    return demos
