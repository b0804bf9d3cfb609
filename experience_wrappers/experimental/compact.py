"""The compact experience input (experimental: it tied the full one): one key instead of three.

The wrappers add three keys to every observation: ``experience`` ``(k, d)``,
``experience_utility`` ``(k,)`` and ``experience_mask`` ``(k,)``. :class:`CompactExperience`
(on an :class:`~experience_wrappers.ExperienceWrapper`) and
:class:`~integrations.sb3.experimental.CompactExperienceVecEnv` (on an
:class:`~integrations.sb3.ExperienceVecEnv`) replace them by one, ``experience`` ``(d + 1,)``:
the mask-weighted mean of the shown entries' values, followed by the fraction of the ``k``
slots shown. An experience-free episode (nothing shown) reads as
zeros, the same as the three keys' padding, so the parts that build an observation "seen
without experience" by zeroing the experience keys (the value baseline, self-imitation's
replayed states) read it unchanged.

Why this layout. SB3's default policy pays both per key (each key is a tensor converted,
preprocessed, flattened and copied into and out of the ``DictRolloutBuffer`` at every step and
minibatch) and per value (every value widens the first layer), and both only a little.
``benchmarks/studies/input_cost.py`` times SB3's own work per env step with zero-filled keys on
MiniHack-Room-5x5 (collection and update, no env; k=4, d=16; the fastest of 21 turns): 82-83 us
without experience keys; the full input's three keys (72 values) add 6.4-7.3 us, one key of the
same 72 values 3.6-5.0 us, three keys of 17 values 3.7-4.5 us, one key of 17 values (this
layout) 1.4-1.8 us. The key count and the width each make about half of the full input's cost,
so the compact input is one key, no wider than what it carries. Against a whole PPO step of
the default policy (about 340 us at 2,980 steps/s) the difference is 1-2 %: the compact input
ties the full one within the noise at 16k steps (``benchmarks/results/overhead-compact.json``);
the rest of the default policy's gap to PPO is the wrapper's path, not the keys
(``docs/scaling.md``, "SB3's default policy: a compact experience input").

What it carries: the two things the attention reader's output
(:class:`~integrations.sb3.experience_features.ExperienceFeaturesExtractor`) sums the channel up to, whether
anything is shown (there the guided flag; here the fraction, 0 for a free episode) and what
the shown entries say (there an attention-weighted pool; here their values' mean). What it
leaves out: the entries one by one (attention over them: the extractor needs the three keys
and says so) and their utilities (the bank's ranking, already used to pick them).

Off the main path since it tied: with SB3's default policy, one run of 16k steps gave the two
inputs the same steps/s within the noise (``benchmarks/results/overhead-compact.json``).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

__all__ = ["CompactExperience", "compact_space", "compact_experience", "compact_observation",
           "compact_observation_space"]

#: the keys the compact one replaces
FULL_KEYS = ("experience", "experience_utility", "experience_mask")


def compact_space(exp_dim: int) -> spaces.Box:
    """The compact ``experience`` key's space: ``(exp_dim + 1,)`` float32.

    >>> compact_space(4).shape
    (5,)
    """
    return spaces.Box(-np.inf, np.inf, (exp_dim + 1,), np.float32)


def compact_experience(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The compact input of shown entries: ``[mask-weighted mean of values, fraction of slots shown]``.

    Args:
        values: ``(..., k, d)`` the entries' values (slots with mask 0 are ignored).
        mask: ``(..., k)`` 1 where a slot is shown, 0 where it is padding.

    Returns:
        ``(..., d + 1)`` float32; all zeros where nothing is shown.

    >>> v = np.array([[[1.0, 2.0], [3.0, 4.0], [9.0, 9.0]]], np.float32)
    >>> compact_experience(v, np.array([[1.0, 1.0, 0.0]], np.float32)).tolist()
    [[2.0, 3.0, 0.6666666865348816]]
    >>> compact_experience(v, np.zeros((1, 3), np.float32)).tolist()
    [[0.0, 0.0, 0.0]]
    """
    values = np.asarray(values, np.float32)
    mask = np.asarray(mask, np.float32)
    shown = mask.sum(axis=-1, keepdims=True)
    mean = (values * mask[..., None]).sum(axis=-2) / np.maximum(shown, 1.0)
    return np.concatenate([mean, shown / mask.shape[-1]], axis=-1).astype(np.float32, copy=False)


def compact_observation_space(space: spaces.Dict) -> spaces.Dict:
    """A wrapped observation space with the three experience keys replaced by the compact one.

    Raises:
        ValueError: ``space`` is not the Dict of an experience wrapper (the three keys).
    """
    if not isinstance(space, spaces.Dict) or not all(k in space.spaces for k in FULL_KEYS):
        raise ValueError(f"the compact input replaces the keys {list(FULL_KEYS)} of an experience wrapper's "
                         f"observation; got {space}")
    exp = space["experience"].shape
    assert exp is not None and len(exp) == 2  # (k, d)
    parts = {k: v for k, v in space.spaces.items() if k not in FULL_KEYS}
    parts["experience"] = compact_space(int(exp[1]))
    return spaces.Dict(parts)


def compact_observation(obs: dict[str, Any]) -> dict[str, Any]:
    """``obs`` (one env's or a batch) with its three experience keys replaced by the compact one."""
    out = {k: v for k, v in obs.items() if k not in FULL_KEYS}
    out["experience"] = compact_experience(obs["experience"], obs["experience_mask"])
    return out


class CompactExperience(gym.ObservationWrapper):
    """An :class:`~experience_wrappers.ExperienceWrapper`'s observations with the compact input.

    >>> from experience_wrappers import ExperienceBank, ExperienceWrapper
    >>> env = CompactExperience(ExperienceWrapper(gym.make("CartPole-v1"), ExperienceBank(),
    ...                                           manager_kwargs={"mode": "sync"}))
    >>> obs, _ = env.reset(seed=0)
    >>> sorted(obs), obs["experience"].shape, obs in env.observation_space
    (['experience', 'observation'], (17,), True)
    """

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.observation_space = compact_observation_space(env.observation_space)  # type: ignore[arg-type]

    def observation(self, observation: Any) -> dict[str, Any]:
        return compact_observation(observation)
