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
from stable_baselines3.common.callbacks import BaseCallback, CallbackList

from experience_wrappers import ExperienceBank
from experience_wrappers.replay import SuccessReplay
from experience_wrappers.rollin import BankGuide, ReplayGuide, RollInCurriculum, instance_seeds
from integrations.demos import ingest_demonstrations
from integrations.sb3 import (
    ActionPriorPolicy,
    CRLCallback,
    ExperienceEvalCallback,
    crl_policy_kwargs,
    find_experience,
)
from integrations.sb3.evaluation import evaluate_with_and_without_experience, run_episodes
from integrations.sb3.neighbour_imitation import NeighbourImitationCallback
from integrations.sb3.rollin import GuidedRollInVecEnv, RollInCallback, RollInView
from integrations.sb3.self_imitation import SelfImitationCallback, add_demonstrations

from .algos import check_algo_arm, resolve_algo
from .arms import Arm
from .bank_tracking import BankTracker
from .envs import build_env, family_of
from .tracking import CurveTracker

__all__ = ["train_run", "versions"]

PPO_KEYS = ("learning_rate", "n_steps", "batch_size", "n_epochs", "ent_coef", "gamma", "gae_lambda",
            "clip_range", "vf_coef", "max_grad_norm")


def _git_commit() -> str:
    try:
        root = Path(__file__).resolve().parent.parent
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True,
                              text=True, timeout=10).stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def versions() -> dict[str, str]:
    out = {"python": platform.python_version(), "commit": _git_commit()}
    for dist in ("complementary-rl", "torch", "stable-baselines3", "gymnasium", "numpy", "hnswlib",
                 "minihack", "nle", "metaworld", "mujoco"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    return out


#: demonstrations of a run with seed ``s`` are recorded from reset seed ``s + DEMO_SEED_OFFSET`` on
DEMO_SEED_OFFSET = 20_000


def _demonstrations(env: Any, env_id: str, arm: Arm, n: int, seed: int, fam: Any,
                    replay: SuccessReplay | None, gamma: float) -> tuple[dict[str, Any], list[Any]]:
    """Record ``n`` scripted demonstrations; distil them into the run's bank (CRL arms) and pin
    them in its self-imitation replay (arms with imitation). Returns the record and the demonstrations."""
    t0 = time.perf_counter()
    demos = fam.demonstrator(env_id, n, seed + DEMO_SEED_OFFSET)
    record: dict[str, Any] = {"episodes": len(demos), "mean_length": float(np.mean([len(d.actions) for d in demos]))}
    if arm.crl:
        manager = find_experience(env)[0][0]
        record["segments"] = ingest_demonstrations(manager, demos, **arm.ingest)
        record["bank_size"] = len(manager.bank)
    if replay is not None:
        record["replay_states"] = add_demonstrations(replay, demos, gamma)
    record["seconds"] = round(time.perf_counter() - t0, 2)
    return record, demos


def _rollin_env(env: Any, env_id: str, arm: Arm, seed: int, fam: Any, demos: list[Any]) -> GuidedRollInVecEnv:
    """Wrap the training env for guided roll-in (the arm's ``rollin``): ``h`` starts at the
    longest demonstration; with ``on_demonstrated`` roll-in episodes start on the
    demonstrations' instances (their reset seeds, recovered here). ``guide_type`` "bank" (the
    default): the guide reads the run's bank (``guide``: its arguments); "replay": each
    demonstration's recorded actions replayed on its own instance (no bank)."""
    cfg = dict(arm.rollin or {})
    kind = cfg.pop("guide_type", "bank")
    guide_kwargs = cfg.pop("guide", {})
    curriculum = RollInCurriculum.for_lengths([len(d.actions) for d in demos], **cfg.pop("curriculum", {}))
    seeds = None
    if cfg.pop("on_demonstrated", False):
        probe = fam.make_vec(env_id, 1, seed)
        try:
            seeds = instance_seeds(probe.envs[0], demos, seed + DEMO_SEED_OFFSET)
        finally:
            probe.close()
    guide: BankGuide | ReplayGuide
    if kind == "bank":
        guide = BankGuide(find_experience(env)[0][0], **guide_kwargs)
    else:
        assert seeds is not None, "checked in train_run: a replay guide rolls in on the demonstrated instances"
        guide = ReplayGuide.from_demonstrations(demos, seeds)
    return GuidedRollInVecEnv(env, guide, curriculum, instance_seeds=seeds, seed=seed, **cfg)


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
    fam = family_of(env_id)
    n_demos = arm.demonstrations if (demonstrations is None or not arm.demonstrations) else demonstrations
    if n_demos and fam.demonstrator is None:
        raise ValueError(f"arm {arm.name!r} starts from demonstrations, but {env_id!r} has no scripted "
                         "demonstrator (MiniHack navigation tasks have one)")
    if n_demos and not arm.crl and arm.imitation is None:
        raise ValueError(f"arm {arm.name!r} starts from demonstrations but has neither a bank nor imitation")
    rollin_guide = None if arm.rollin is None else arm.rollin.get("guide_type", "bank")
    if rollin_guide not in (None, "bank", "replay"):
        raise ValueError(f"arm {arm.name!r}: rollin guide_type must be 'bank' or 'replay', got {rollin_guide!r}")
    if rollin_guide == "bank" and not (arm.crl and n_demos):
        raise ValueError(f"arm {arm.name!r} rolls in with the bank's demonstrations: it needs crl=True and "
                         f"demonstrations > 0, got crl={arm.crl} and {n_demos} demonstrations")
    if rollin_guide == "replay" and not (n_demos and arm.rollin.get("on_demonstrated", False)):  # type: ignore[union-attr]
        raise ValueError(f"arm {arm.name!r} replays demonstrations on their instances: it needs demonstrations > 0 "
                         f"and rollin on_demonstrated=True, got {n_demos} demonstrations and {arm.rollin}")
    if arm.neighbour is not None and not (arm.crl and n_demos):
        raise ValueError(f"arm {arm.name!r}: neighbour imitation follows the bank's demonstration entries; it needs "
                         f"crl=True and demonstrations, got crl={arm.crl} and {n_demos} demonstrations")
    if arm.group_size is not None and (arm.rollin is not None or not arm.crl):
        raise ValueError(f"arm {arm.name!r} pairs credit by replayed instances (group_size={arm.group_size}): it "
                         "needs crl=True and no roll-in (roll-in resets envs onto its own instances)")
    bank = ExperienceBank(seed=seed, **arm.bank) if arm.crl else None
    env = build_env(env_id, n_envs, seed, bank, arm.wrapper, arm.manager, fam, group_size=arm.group_size)
    replay = SuccessReplay() if arm.imitation is not None else None
    gamma = float(hyper.get("gamma", 0.99))
    demos_record, demos = (_demonstrations(env, env_id, arm, n_demos, seed, fam, replay, gamma) if n_demos
                           else (None, []))
    rollin_env = _rollin_env(env, env_id, arm, seed, fam, demos) if arm.rollin is not None else None
    if rollin_env is not None:
        env = rollin_env  # the model trains on it; evaluations switch it off
    ppo_kwargs = {k: hyper[k] for k in PPO_KEYS if k in hyper}
    if arm.crl:
        base_cls, base_kwargs = fam.base_extractor or (None, None)
        policy_kwargs = crl_policy_kwargs(base_extractor_class=base_cls, base_extractor_kwargs=base_kwargs)
        policy: Any = ActionPriorPolicy if arm.prior_policy else "MultiInputPolicy"
    else:
        policy_kwargs = dict(fam.base_policy_kwargs)
        policy = "MultiInputPolicy" if hasattr(env.observation_space, "spaces") else "MlpPolicy"
    check_algo_arm(algo, arm)  # --algo: PPO by default, or A2C, RecurrentPPO, MaskablePPO
    algo_cls, policy, ppo_kwargs = resolve_algo(algo, policy, ppo_kwargs)
    model = algo_cls(policy, env, seed=seed, policy_kwargs=policy_kwargs, verbose=0, tensorboard_log=tensorboard_log,
                     **ppo_kwargs)
    tracker = CurveTracker()
    # with roll-in the curve counts episodes from true starts only
    callbacks: list[BaseCallback] = [tracker if rollin_env is None else
                                     RollInView(tracker, executed_actions=False, true_starts_only=True)]
    crl_cb = bank_cb = None
    if arm.crl:
        crl_cb = CRLCallback(**arm.callback)
        bank_cb = BankTracker(bank)
        callbacks += [crl_cb, bank_cb]
    sil_cb = None
    if arm.imitation is not None:
        assert replay is not None
        sil_cb = SelfImitationCallback(replay, seed=seed, **arm.imitation)
        # the replay must hold the actions executed (the guide's on guide-acted steps)
        callbacks.append(sil_cb if rollin_env is None else RollInView(sil_cb))
    nbr_cb = None
    if arm.neighbour is not None:  # after the PPO update, as self-imitation
        cfg = dict(arm.neighbour)
        guide = BankGuide(find_experience(env)[0][0], **cfg.pop("guide", {}))
        nbr_cb = NeighbourImitationCallback(guide, seed=seed, **cfg)
        callbacks.append(nbr_cb)
    eval_cb = None
    if eval_every and eval_episodes:
        # evaluation envs never learn, so they are not paired (paired=False: no replayed instances)
        eval_wrapper = ({**arm.wrapper, "learn": False, "paired": False, "manager": find_experience(env)[0][0]}
                        if arm.crl else None)
        eval_env = build_env(env_id, eval_envs, seed + 10_000, bank, eval_wrapper, arm.manager, fam)
        eval_cb = ExperienceEvalCallback(eval_env, eval_every, eval_episodes, deterministic=False)
        callbacks.append(eval_cb)
    rollin_cb = None
    if rollin_env is not None:  # after CRLCallback: its advantage normalisation would undo the zeros
        rollin_cb = RollInCallback(rollin_env)
        callbacks.append(rollin_cb)
    deadline_cb = None
    if os.environ.get("CRL_BENCH_DEADLINE"):
        deadline_cb = _StopAtDeadline(float(os.environ["CRL_BENCH_DEADLINE"]))
        callbacks.append(deadline_cb)
    t0 = time.perf_counter()
    model.learn(steps, callback=CallbackList(callbacks))
    eval_s = eval_cb.seconds if eval_cb is not None else 0.0
    wall = time.perf_counter() - t0 - eval_s
    result: dict[str, Any] = {
        "env_id": env_id, "arm": arm.name, "algo": algo, "seed": seed, "total_steps": int(model.num_timesteps),
        "n_envs": n_envs, "hyperparameters": hyper, "arm_config": {
            "wrapper": arm.wrapper, "manager": arm.manager,
            "callback": {k: list(v) if isinstance(v, tuple) else v for k, v in arm.callback.items()},
            "prior_policy": arm.prior_policy, "demonstrations": arm.demonstrations,
            "ingest": arm.ingest, "bank": arm.bank, "imitation": arm.imitation, "rollin": arm.rollin,
            **({"group_size": arm.group_size} if arm.group_size is not None else {}),
            **({"neighbour": arm.neighbour} if arm.neighbour is not None else {})},
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
    if nbr_cb is not None:
        labelled = [h["labelled"] for h in nbr_cb.history]
        result["neighbour"] = {"updates": len(nbr_cb.history),
                               "labelled_mean": float(np.mean(labelled)) if labelled else 0.0,
                               "history": nbr_cb.history[:: max(1, len(nbr_cb.history) // 50)]}
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
        result["bank_curve"] = bank_cb.history
    if rollin_env is not None:
        rollin_env.enabled = False  # evaluation (and everything after training) starts from true starts
    if eval_episodes:
        if arm.crl:
            result["evaluation"] = evaluate_with_and_without_experience(model, env, eval_episodes,
                                                                         deterministic=False)
        else:
            result["evaluation"] = {"without_experience": run_episodes(model, env, eval_episodes,
                                                                       deterministic=False)}
    if model_dir is not None:  # the runner's --save-model: model.zip (+ experience/ for CRL arms)
        from integrations.sb3 import save_crl

        result["model_dir"] = str(save_crl(model_dir, model) if arm.crl else model.save(f"{model_dir}/model.zip")
                                  or model_dir)
    if arm.crl:
        for mgr in find_experience(env)[0]:
            mgr.close()
    env.close()
    result["final_outcome_mean_last"] = float(np.mean([c["outcome"] for c in tracker.curve[-5:]
                                                       if c["outcome"] is not None] or [np.nan]))
    return result
