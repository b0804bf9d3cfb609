"""Periodic evaluation with and without experience, logged through SB3's logger."""

from __future__ import annotations

import math
import time
import warnings
from typing import Any

from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper, unwrap_vec_normalize

from experience_wrappers.validators import check_int

from .discovery import find_experience
from .evaluation import check_deterministic, evaluate_with_and_without_experience, run_episodes
from .lifecycle import take_statistics

__all__ = ["ExperienceEvalCallback"]


class ExperienceEvalCallback(BaseCallback):
    """Every ``eval_freq`` environment steps, evaluate on ``eval_env`` with and without experience.

    The role of SB3's ``EvalCallback`` for Complementary RL: the paper reports both numbers,
    and their gap says whether the agent uses what it is shown. Build ``eval_env`` with
    experience wrappers on the *training* bank (the default ``learn=None`` learns nothing while
    another env trains the bank; ``learn=False`` never does), so evaluation episodes are never
    credited or distilled and retrieval counters are left alone; a VecEnv without experience
    wrappers is evaluated once, as ``"without_experience"`` (a vanilla PPO baseline).

    A ``VecNormalize`` in ``eval_env`` gets the training env's statistics before each evaluation
    (and the keys they cover), as SB3's ``EvalCallback`` syncs them.

    Each evaluation is appended to :attr:`history` (its wall-clock added to :attr:`seconds`) and logged as
    ``eval/{with,without}_experience/{success,return,length}`` (success only when the env
    reports it).

    Args:
        eval_env: the evaluation VecEnv (never the training env).
        eval_freq: evaluate each time this many more environment steps have been taken.
        n_eval_episodes: episodes per evaluation and per setting.
        deterministic: greedy actions (SB3's default) or sampled ones.
        verbose: 1 prints each evaluation.

    Raises:
        ValueError: bad arguments, or ``eval_env`` is the training env or holds it (a
            ``VecMonitor(train_env)``: each evaluation would reset the training episodes).
    """

    def __init__(self, eval_env: VecEnv, eval_freq: int = 10_000, n_eval_episodes: int = 20,
                 deterministic: bool = True, verbose: int = 0) -> None:
        super().__init__(verbose)
        if not isinstance(eval_env, VecEnv):
            raise ValueError(f"eval_env must be an SB3 VecEnv, got {type(eval_env).__name__}")
        self.eval_env = eval_env
        self.eval_freq = check_int("eval_freq", eval_freq, minimum=1, numpy=True)
        self.n_eval_episodes = check_int("n_eval_episodes", n_eval_episodes, minimum=1, numpy=True)
        self.deterministic = check_deterministic(deterministic)
        self.history: list[dict[str, Any]] = []
        self.seconds = 0.0  # wall-clock spent evaluating (to subtract from training time)
        self._next = self.eval_freq
        try:
            find_experience(eval_env)
            self.with_experience = True
        except ValueError:
            self.with_experience = False

    def _init_callback(self) -> None:
        train = self.model.get_env()
        if train is not None and any(any(e is t for t in _layers(train)) for e in _layers(self.eval_env)):
            raise ValueError("eval_env must be a separate env, not the training env"
                             + ("" if self.eval_env is train else " nor a wrapper of it (each evaluation would reset "
                                "the training episodes): build a second VecEnv on the same bank"))
        normalises = train is not None and getattr(unwrap_vec_normalize(train), "norm_obs", False)
        if normalises and unwrap_vec_normalize(self.eval_env) is None:
            warnings.warn("the training env normalises observations (VecNormalize) and eval_env does not: the policy "
                          "is evaluated on observations it never saw; wrap eval_env in VecNormalize(..., "
                          "training=False, norm_reward=False) too", UserWarning, stacklevel=2)
        self._next = self.model.num_timesteps + self.eval_freq

    def evaluate(self) -> dict[str, Any]:
        """Evaluate now, record the result in :attr:`history` and the logger, and return it."""
        t0 = time.perf_counter()
        sync_normalization(self.model.get_env(), self.eval_env)
        if self.with_experience:
            res = evaluate_with_and_without_experience(self.model, self.eval_env, self.n_eval_episodes,
                                                       self.deterministic)
        else:
            res = {"without_experience": run_episodes(self.model, self.eval_env, self.n_eval_episodes,
                                                      self.deterministic)}
        self.seconds += time.perf_counter() - t0
        record = {"steps": int(self.num_timesteps), **res}
        self.history.append(record)
        for setting, stats in res.items():
            for key in ("success", "return", "length"):
                value = stats[key]
                if not (isinstance(value, float) and math.isnan(value)):
                    self.logger.record(f"eval/{setting}/{key}", value)
        if self.verbose:
            parts = [(f"{s}: success {v['success']:.2f}, " if not math.isnan(v["success"]) else f"{s}: ")
                     + f"return {v['return']:.2f}" for s, v in res.items()]  # success only where reported
            print(f"eval at {self.num_timesteps} steps: " + "; ".join(parts))
        return record

    def _on_step(self) -> bool:
        if self.num_timesteps >= self._next:
            self.evaluate()
            while self._next <= self.num_timesteps:
                self._next += self.eval_freq
        return True


def sync_normalization(train: VecEnv | None, eval_env: VecEnv) -> None:
    """Copy the training env's ``VecNormalize`` statistics into ``eval_env``'s, with the keys they cover
    (:func:`~integrations.sb3.lifecycle.take_statistics`)."""
    source = unwrap_vec_normalize(train) if train is not None else None
    target = unwrap_vec_normalize(eval_env)
    if source is None or target is None or source is target:
        return
    take_statistics(target, source, copied=True)


def _layers(venv: VecEnv) -> list[VecEnv]:
    """``venv`` and every VecEnv it wraps."""
    out = [venv]
    while isinstance(out[-1], VecEnvWrapper):
        out.append(out[-1].venv)
    return out
