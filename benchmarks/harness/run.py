"""Train one (environment, arm, seed) run and return its result record."""

from __future__ import annotations

import os
import platform
import subprocess
import time
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import torch
from stable_baselines3.common.callbacks import BaseCallback

from benchmarks.suites.arms import Arm
from integrations.sb3 import (
    ComplementaryRL,
    ExperienceEvalCallback,
)
from integrations.sb3.env_families import build_env
from integrations.sb3.rollin_callbacks import RollInView

from .algos import check_algo_arm, resolve_algo
from .bank_tracking import BankTracker
from .tracking import CurveTracker
from .zoo import schedule

__all__ = ["train_run", "versions"]

PPO_KEYS = ("learning_rate", "n_steps", "batch_size", "n_epochs", "ent_coef", "gamma", "gae_lambda",
            "clip_range", "vf_coef", "max_grad_norm")


def _git_commit() -> str:
    try:
        root = Path(__file__).resolve().parents[2]
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True,
                              text=True, timeout=10).stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


#: the commit when this module was imported: the code a run uses (read at its start; a commit made
#: while it runs is not its code, and a result written at the end must not name it)
_COMMIT = _git_commit()


def versions(*extra: str) -> dict[str, str]:
    """Python's version, the commit this code came from (:data:`_COMMIT`) and the installed versions of the
    packages a run uses, with ``extra`` distributions (e.g. ``"ray"``) too; a package not installed is left out."""
    out = {"python": platform.python_version(), "commit": _COMMIT}
    for dist in ("complementary-rl", "torch", "stable-baselines3", "gymnasium", "numpy", "hnswlib",
                 "minihack", "nle", "metaworld", "mujoco", *extra):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    return out


class _StopAtDeadline(BaseCallback):
    """Stop ``learn`` cleanly once wall-clock passes ``deadline`` (epoch seconds); the result then
    records the steps actually trained (``total_steps``) and ``stopped_at_deadline``."""

    def __init__(self, deadline: float) -> None:
        super().__init__()
        self.deadline = deadline
        self.stopped = False

    def _on_step(self) -> bool:
        if time.time() > self.deadline:
            self.stopped = True
            return False
        return True


def train_run(env_id: str, arm: Arm, seed: int, hyper: dict[str, Any], total_steps: int | None = None,
              eval_episodes: int = 0, torch_threads: int = 1, eval_every: int = 0,
              eval_envs: int = 4, demonstrations: int | None = None, model_dir: str | None = None,
              tensorboard_log: str | None = None, algo: str = "ppo") -> dict[str, Any]:
    """Train PPO (with or without Complementary RL) and return curves, timings and evaluation.

    ``eval_episodes``: episodes of the final evaluation, with and without experience (0: none).
    ``eval_every``: also evaluate every this many steps on ``eval_envs`` separate envs that
    share the bank but never learn (:class:`ExperienceEvalCallback`); 0: no interval evaluation.
    ``wall_s`` and ``steps_per_s`` count training only; ``eval_s`` is the time the interval
    evaluations took.
    """
    torch.set_num_threads(torch_threads)
    steps = int(total_steps or hyper["n_timesteps"])
    n_envs = int(hyper.get("n_envs", 8))
    n_demos = arm.demonstrations if (demonstrations is None or not arm.demonstrations) else demonstrations
    check_algo_arm(algo, arm)  # --algo: PPO by default, or A2C, RecurrentPPO, MaskablePPO
    algo_cls, policy, ppo_kwargs = resolve_algo(algo, None, {k: schedule(hyper[k]) for k in PPO_KEYS if k in hyper})
    # the arm is a set of the public object's arguments
    method = ComplementaryRL(env_id, algorithm=algo_cls, policy=policy, n_envs=n_envs, seed=seed,
                             experience=arm.crl, demonstrations=n_demos,
                             self_imitation=False if arm.imitation is None else arm.imitation,
                             rollin=False if arm.rollin is None else arm.rollin, group_size=arm.group_size,
                             bank_kwargs=arm.bank, wrapper_kwargs=arm.wrapper, manager_kwargs=arm.manager,
                             callback_kwargs=arm.callback, ingest_kwargs=arm.ingest,
                             algorithm_kwargs=ppo_kwargs, tensorboard_log=tensorboard_log)
    model, bank = method.model, method.bank
    tracker = CurveTracker()
    # with roll-in the curve counts episodes from true starts only
    callbacks: list[BaseCallback] = [tracker if method.rollin_env is None else
                                     RollInView(tracker, executed_actions=False, true_starts_only=True)]
    bank_cb = None
    if arm.crl:
        assert bank is not None  # a CRL arm has a bank
        bank_cb = BankTracker(bank)
        callbacks.append(bank_cb)
    eval_cb = None
    if eval_every and eval_episodes:
        # evaluation envs never learn, so they are not paired (paired=False: no replayed instances)
        eval_wrapper = ({**arm.wrapper, "learn": False, "paired": False, "manager": method.manager}
                        if arm.crl else None)
        eval_env = build_env(env_id, eval_envs, seed + 10_000, bank, eval_wrapper, arm.manager, method.family)
        eval_cb = ExperienceEvalCallback(eval_env, eval_every, eval_episodes, deterministic=False)
        callbacks.append(eval_cb)
    deadline_cb = None
    if os.environ.get("CRL_BENCH_DEADLINE"):
        deadline_cb = _StopAtDeadline(float(os.environ["CRL_BENCH_DEADLINE"]))
        callbacks.append(deadline_cb)
    t0 = time.perf_counter()
    method.learn(steps, callback=callbacks)
    crl_cb, sil_cb, replay = method.crl_callback, method.sil_callback, method.replay
    rollin_env, rollin_cb, demos_record = method.rollin_env, method.rollin_callback, method.demonstrations_record
    eval_s = eval_cb.seconds if eval_cb is not None else 0.0
    wall = time.perf_counter() - t0 - eval_s
    result: dict[str, Any] = {
        "env_id": env_id, "arm": arm.name, "algo": algo, "seed": seed, "total_steps": int(model.num_timesteps),
        "n_envs": n_envs, "hyperparameters": hyper, "arm_config": {
            "wrapper": arm.wrapper, "manager": arm.manager,
            "callback": {k: list(v) if isinstance(v, tuple) else v for k, v in arm.callback.items()},
            "demonstrations": arm.demonstrations,
            "ingest": arm.ingest, "bank": arm.bank, "imitation": arm.imitation, "rollin": arm.rollin,
            **({"group_size": arm.group_size} if arm.group_size is not None else {})},
        "demonstrations_used": int(n_demos),
        "wall_s": round(wall, 2), "steps_per_s": round(model.num_timesteps / wall, 1),
        "uses_success": bool(tracker.uses_success), "first_reached": tracker.first_reached,
        "final_outcome": tracker.rate(), "episodes": tracker.episodes, "curve": tracker.curve,
        "versions": versions(), "torch_threads": torch_threads,
    }
    if deadline_cb is not None:
        result["stopped_at_deadline"] = deadline_cb.stopped
    if demos_record is not None:
        result["demonstrations"] = demos_record
    if sil_cb is not None and replay is not None:
        result["imitation"] = {"replay": replay.counts(), "episodes": dict(replay.episodes), **sil_cb.stats}
    if rollin_env is not None and rollin_cb is not None:
        cur = rollin_env.curriculum
        result["rollin"] = {"h": int(cur.h), "shrinks": int(cur.shrinks), "history": rollin_cb.history,
                            "instance_seeds": (None if rollin_env.instance_seeds is None
                                               else rollin_env.instance_seeds.tolist())}
    if eval_cb is not None:
        result["eval_curve"] = eval_cb.history
        result["eval_s"] = round(eval_s, 2)
        eval_cb.eval_env.close()
    if crl_cb is not None:
        m = crl_cb.manager
        result["crl"] = {"bank": m.bank.stats(), "manager": m.stats()}
        assert bank_cb is not None  # with the CRL callback
        result["bank_curve"] = bank_cb.history
    if eval_episodes:  # from true starts (roll-in off), with and without experience
        result["evaluation"] = method.evaluate(eval_episodes, deterministic=False)
    if model_dir is not None:  # the runner's --save-model: the whole run (ComplementaryRL.save)
        result["model_dir"] = str(method.save(model_dir, overwrite=True))  # a rerun replaces its own
    method.close()
    result["final_outcome_mean_last"] = float(np.mean([c["outcome"] for c in tracker.curve[-5:]
                                                       if c["outcome"] is not None] or [np.nan]))
    return result
