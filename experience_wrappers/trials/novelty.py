"""``NoveltyBonus``: a reward for stepping onto an observation new to the run, until it found the goal.

What a run's memory of failed trials is for is going somewhere new; this wrapper pays for it
on the training steps of guided runs. It sits on a :class:`~experience_wrappers.trials.wrapper.RunScopeWrapper`
(below a ``Monitor``) and reads the run from the trial's ``info``, so it holds no memory and
no experience of its own. Measured on the hidden-goal room (``crl-trials-novelty``, 5 seeds):
cumulative success by trial 4 0.53 against 0.35 without it; the trials benchmarks'
``crl-trials-novelty-always`` arm pays it in every guided run (``until_success=False``).
Training only: wrap the training envs, never the evaluation ones.
"""

from __future__ import annotations

import warnings
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np

from ..validators import check_real
from .checks import ENTRIES_KEY, MASK_KEY, RUN_BEST_KEY, TRIAL_INDEX_KEY, TRIAL_INFO_KEY

__all__ = ["NoveltyBonus", "NOVEL_SAID"]

#: the bonus's first eligible steps, after which it warns (once) where it paid more than 9 in 10 of them
NOVEL_SAID = 2000

_SHOWN = (ENTRIES_KEY, MASK_KEY, TRIAL_INDEX_KEY, RUN_BEST_KEY)  # what run scope's wrapper adds: not part of where the agent is


class NoveltyBonus(gym.Wrapper):
    """Add ``bonus`` to the reward of a guided run's step onto an observation the run has not seen.

    Args:
        env: a :class:`~experience_wrappers.trials.wrapper.RunScopeWrapper` (or an env above one that keeps
            its ``info["trial"]``: ``run``, ``guided``, ``demonstrated``, and ``info["trial_success"]``
            at a trial's end).
        bonus: added per new observation; a finite number > 0.
        until_success: pay only while the run has neither a successful trial nor a
            demonstration (explore until the goal is found, follow once it is); False: in
            every guided run.

    "Seen" counts the run's earlier trials and this one, the reset observations included; an
    observation is compared as the env shows it, byte for byte, without the entries, the mask and the
    trial index. Free runs (the baseline of paired credit) are never paid. Where observations seldom
    repeat exactly (continuous ones), it would pay nearly every step: it warns where it paid more than
    9 in 10 of its first :data:`NOVEL_SAID` eligible steps.

    Raises:
        ValueError: ``bonus`` is not a finite number > 0; at reset, an env without ``info["trial"]``.
    """

    def __init__(self, env: gym.Env, bonus: float, until_success: bool = True) -> None:
        super().__init__(env)
        self.bonus = check_real("novelty_bonus", bonus, minimum=0)
        if not self.bonus:
            raise ValueError(f"novelty_bonus must be a finite number > 0, got {bonus!r} (0 pays nothing: leave the "
                             "wrapper out)")
        self.until_success = bool(until_success)
        self._run: int | None = None
        self._visited: set[bytes] = set()  # the observations this run has stood on
        self._found = False  # the run has a successful trial or a demonstration
        self._guided = False
        self._eligible = self._paid = 0  # steps the bonus could pay, and paid (until NOVEL_SAID of them)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(seed=seed, options=options)
        trial = info.get(TRIAL_INFO_KEY)
        if not isinstance(trial, dict) or "run" not in trial:
            raise ValueError("NoveltyBonus reads the run from info['trial']: put it on run scope's "
                             "ExperienceWrapper(env, memory, scope=\"run\", ...) "
                             f"(the env below gave the info keys {sorted(info)})")
        if trial["run"] != self._run:  # a new run: nothing seen, nothing found but its demonstration
            self._run, self._visited = trial["run"], set()
            self._found = bool(trial.get("demonstrated", False))
        self._guided = bool(trial.get("guided", False))
        self._visited.add(_obs_key(obs))
        return obs, info

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        if self._guided and not (self.until_success and self._found):
            key = _obs_key(obs)
            new = key not in self._visited
            if new:
                self._visited.add(key)
                reward = float(reward) + self.bonus
            if self._eligible < NOVEL_SAID:
                self._eligible, self._paid = self._eligible + 1, self._paid + new
                if self._eligible == NOVEL_SAID and self._paid > 0.9 * NOVEL_SAID:
                    warnings.warn(f"the novelty bonus paid {self._paid} of the first {NOVEL_SAID} steps it could pay: "
                                  "this env's observations seldom repeat exactly (continuous values, a step counter), "
                                  "so it pays for steps, not for new places; pass novelty_bonus=0 (or observations "
                                  "that repeat where the agent returns)", UserWarning, stacklevel=2)
        self._found = self._found or bool(info.get("trial_success", False))
        return obs, reward, terminated, truncated, info


def _obs_key(obs: Any) -> bytes:
    """A hashable key of one observation (a Dict's arrays in key order, the shown entries left out)."""
    if isinstance(obs, dict):
        return b"|".join(np.ascontiguousarray(obs[k]).tobytes() for k in sorted(obs) if k not in _SHOWN)
    return np.ascontiguousarray(obs).tobytes()
