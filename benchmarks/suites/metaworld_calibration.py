"""Calibration of the learner on Meta-World ML1 (issue 37, first step): PPO settings that learn reach.

``python -m benchmarks.suites.metaworld_calibration --setting NAME --seed S --steps N --goal visible|hidden
--out benchmarks/results/metaworld-calibration/`` trains one named setting (:data:`SETTINGS`: PPO
keyword arguments and wrapper choices) on the 50 training goals of ``metaworld.ML1(task, seed=0)``,
then evaluates the frozen policy (its ``VecNormalize`` statistics frozen too) on ML1's 50 held-out
goals, one episode per goal, deterministically and stochastically, and on the 50 training goals
(deterministically). Success is Meta-World's own ``info["success"]`` at any step of an episode (the
evaluation stops at the first success, as Meta-World's own does). A learning curve (held-out
deterministic success every ``--eval-every`` steps, and the training episodes' success) and the
training throughput go into the result file,
``<out>/<task>_<goal>_<setting>_<steps in k>k_seed<S>.json``.

``--goal visible`` sets ``partially_observable=False`` in each ML1 task (the goal in ``obs[36:39]``,
the MT setting); ``--goal hidden`` keeps ML1's own tasks (goal zeroed: memoryless PPO cannot tell
the goals apart).

``python -m benchmarks.suites.metaworld_calibration --references --out ...`` writes
``<out>/<task>_references.json``: Meta-World's scripted policy (``metaworld.policies``) with the goal
visible on the 50 held-out goals (success rate, steps to success), and the goal-blind reference,
the same scripted controller sent to the mean training goal (what a policy that cannot see the goal
and goes to the mean goal reaches), with the geometric fraction of held-out goals within the
success radius of the mean goal beside it.

The episode cap (``CAP``, 150 steps) is about 3x the scripted reach policy's length (it succeeds in
36-65 steps). The cap is a truncation: SB3 bootstraps the value at ``TimeLimit`` truncations. Episodes
do not end at success by default (Meta-World's reward is positive and dense, 0-10 per step, so
ending at success would cut the reward stream short and teach the policy to hover outside the
success radius); a setting may turn ``terminate_on_success`` on.
"""

from __future__ import annotations

import argparse
import functools
import os
import pickle
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np

from benchmarks.harness.cli_checks import bad_seeds
from benchmarks.harness.result_file import write_result
from benchmarks.harness.run import versions
from integrations.metaworld.constants import NUM_GOALS, REWARD_FUNCTION_VERSION
from integrations.metaworld.goals import build_benchmark
from integrations.metaworld.ml1_trials import visible_tasks
from integrations.metaworld.wrappers import MetaWorldTaskWrapper

if TYPE_CHECKING:  # pragma: no cover - typing only
    from metaworld.types import Task

RESULTS = Path(__file__).resolve().parents[1] / "results" / "metaworld-calibration"
SUITE = "metaworld-calibration"
TASK = "reach-v3"
CAP = 150
N_ENVS = 8
BENCHMARK_SEED = 0
SUCCESS_RADIUS = 0.05  # reach-v3: success when the hand is within 5 cm of the goal

#: the settings: ``ppo`` (PPO's keyword arguments; ``lin_<x>`` is a linear decay from x to 0;
#: ``policy_kwargs.activation_fn`` is ``"tanh"`` or ``"relu"``), ``normalize`` (``None``, or
#: ``VecNormalize``'s ``norm_obs`` / ``norm_reward``), ``reward_scale`` (multiplies the reward),
#: ``terminate_on_success``. ``plain`` is SB3's defaults as measured in issue 37.
_TUNED: dict[str, Any] = {
    "n_steps": 512, "batch_size": 256, "n_epochs": 10, "learning_rate": "lin_3e-4", "gamma": 0.99,
    "gae_lambda": 0.95, "clip_range": 0.2, "ent_coef": 0.0, "vf_coef": 0.5, "max_grad_norm": 0.5,
    "policy_kwargs": {"net_arch": {"pi": [256, 256], "vf": [256, 256]}, "activation_fn": "tanh",
                      "log_std_init": -0.5},
}
SETTINGS: dict[str, dict[str, Any]] = {
    "plain": {"ppo": {"n_steps": 256, "batch_size": 64, "n_epochs": 10, "learning_rate": 3e-4},
              "normalize": None},
    "norm": {"ppo": _TUNED, "normalize": {"norm_obs": True, "norm_reward": True}},
    "norm-std1": {"ppo": {**_TUNED, "policy_kwargs": {**_TUNED["policy_kwargs"], "log_std_init": -1.0}},
                  "normalize": {"norm_obs": True, "norm_reward": True}},
    "norm-sde": {"ppo": {**_TUNED, "use_sde": True, "sde_sample_freq": 4,
                         "policy_kwargs": {**_TUNED["policy_kwargs"], "log_std_init": -2.0}},
                 "normalize": {"norm_obs": True, "norm_reward": True}},
    "obsnorm-rs": {"ppo": _TUNED, "normalize": {"norm_obs": True, "norm_reward": False},
                   "reward_scale": 0.1},
    "norm-b64": {"ppo": {**_TUNED, "batch_size": 64, "learning_rate": 3e-4},
                 "normalize": {"norm_obs": True, "norm_reward": True}},
    # ablations: the tuned PPO without VecNormalize (reward scaled to 0-1 per step), and SB3's
    # defaults with VecNormalize: which ingredient carries the learning?
    "tuned-raw": {"ppo": _TUNED, "normalize": None, "reward_scale": 0.1},
    "plain-norm": {"ppo": {"n_steps": 256, "batch_size": 64, "n_epochs": 10, "learning_rate": 3e-4},
                   "normalize": {"norm_obs": True, "norm_reward": True}},
    "norm-term": {"ppo": _TUNED, "normalize": {"norm_obs": True, "norm_reward": True},
                  "terminate_on_success": True},
}


# ---------------------------------------------------------------------------- goals and envs
def ml1_tasks(task: str = TASK, seed: int = BENCHMARK_SEED, goal: str = "visible"
              ) -> tuple[tuple[Task, ...], tuple[Task, ...]]:
    """ML1's training and held-out goals of ``task`` (``metaworld.ML1(task, seed)``), goal visible or hidden.

    ``goal="visible"`` re-encodes each task with ``partially_observable=False`` (Meta-World's MT
    override: the goal in ``obs[36:39]``); ``"hidden"`` keeps ML1's tasks as they are (goal zeroed).
    """

    if goal not in ("visible", "hidden"):
        raise ValueError(f"goal must be 'visible' or 'hidden', got {goal!r}")
    train, test = _ml1(task, seed)

    def observe(tasks: Sequence[Task]) -> tuple[Task, ...]:
        return tuple(tasks) if goal == "hidden" else visible_tasks(tasks)

    return observe(train), observe(test)


@functools.lru_cache(maxsize=4)
def _ml1(task: str, seed: int) -> tuple[tuple[Task, ...], tuple[Task, ...]]:
    import metaworld

    bench = build_benchmark(lambda: metaworld.ML1(task, seed=seed), NUM_GOALS)
    return tuple(bench.train_tasks), tuple(bench.test_tasks)


def raw_env(task: str = TASK, cap: int = CAP, seed: int | None = None) -> Any:
    """A bare Sawyer environment of ``task`` (pinned reward version) whose path length is ``cap``."""
    import metaworld

    raw = metaworld.env_dict.ALL_V3_ENVIRONMENTS[task](reward_function_version=REWARD_FUNCTION_VERSION)
    raw.max_path_length = cap
    if seed is not None:
        raw.seed(seed)
    return raw


class _ScaleReward(gym.RewardWrapper):
    def __init__(self, env: gym.Env, scale: float) -> None:
        super().__init__(env)
        self.scale = scale

    def reward(self, reward: Any) -> float:
        return float(reward) * self.scale


def make_env(tasks: Sequence[Task], seed: int, cap: int = CAP, terminate_on_success: bool = False,
             reward_scale: float = 1.0, task: str = TASK) -> gym.Env:
    """One training env: a goal of ``tasks`` drawn at each reset, capped at ``cap`` (a truncation)."""
    env: gym.Env = MetaWorldTaskWrapper(gym.wrappers.TimeLimit(raw_env(task, cap, seed), cap), tasks,
                                        terminate_on_success=terminate_on_success)
    if reward_scale != 1.0:
        env = _ScaleReward(env, reward_scale)
    return env


def goal_position(task: Task) -> np.ndarray:
    """The goal position of ``task``: the last 3 entries of its ``rand_vec`` (reach, push, pick-place)."""
    return np.asarray(pickle.loads(task.data)["rand_vec"], dtype=np.float64)[-3:].copy()


def run_episodes(raw: Any, tasks: Sequence[Task], act: Callable[[np.ndarray], np.ndarray],
                 cap: int = CAP, seed: int = 0) -> dict[str, Any]:
    """One episode per task with ``act``, each stopped at its first success or the cap.

    Returns ``{"success", "episodes", "steps_to_success" (mean over successes, or None),
    "per_goal"}`` with ``per_goal`` a list of each goal's steps to success (``None`` if failed).
    """
    per_goal: list[int | None] = []
    for i, task in enumerate(tasks):
        env = MetaWorldTaskWrapper(gym.wrappers.TimeLimit(raw, cap), (task,))
        obs, _ = env.reset(seed=seed * 1000 + i)
        reached = None
        for t in range(cap):
            obs, _, terminated, truncated, info = env.step(act(obs))
            if info["step_success"]:
                reached = t + 1
                break
            if terminated or truncated:
                break
        per_goal.append(reached)
    hits = [s for s in per_goal if s is not None]
    return {"success": round(len(hits) / len(per_goal), 4), "episodes": len(per_goal),
            "steps_to_success": round(float(np.mean(hits)), 1) if hits else None,
            "per_goal": per_goal}


# ---------------------------------------------------------------------------- references
def references(task: str = TASK, cap: int = CAP, n_goals: int | None = None) -> dict[str, Any]:
    """The scripted policy with the goal visible on the held-out goals, and the goal-blind mean-goal reference.

    ``n_goals`` limits the goals evaluated (tests); ``None``: all 50.
    """
    from metaworld.policies import ENV_POLICY_MAP

    train, test = ml1_tasks(task, goal="visible")
    if n_goals is not None:
        test = test[:n_goals]
    policy_cls: Any = ENV_POLICY_MAP[task]
    policy = policy_cls()
    raw = raw_env(task, cap, seed=0)
    train_goals = np.stack([goal_position(t) for t in train])
    test_goals = np.stack([goal_position(t) for t in test])
    mean_goal = train_goals.mean(axis=0)
    scripted = run_episodes(raw, test, policy.get_action, cap)
    blind = run_episodes(raw, test, lambda obs: policy.get_action(np.concatenate([obs[:-3], mean_goal])), cap)
    within = float(np.mean(np.linalg.norm(test_goals - mean_goal, axis=1) <= SUCCESS_RADIUS))
    steps = [s for s in scripted["per_goal"] if s is not None]
    return {
        "suite": SUITE, "task": task, "benchmark": f"metaworld.ML1({task!r}, seed={BENCHMARK_SEED})",
        "cap": cap, "reward_function_version": REWARD_FUNCTION_VERSION, "heldout_goals": len(test),
        "scripted_goal_visible": {**scripted, "steps_min": min(steps) if steps else None,
                                  "steps_max": max(steps) if steps else None},
        "mean_goal": {"goal": [round(float(x), 4) for x in mean_goal],
                      "scripted_to_mean_goal": blind,
                      "heldout_within_radius": round(within, 4), "radius": SUCCESS_RADIUS},
        "note": "success is Meta-World's info['success'] at any step; an episode stops at its first "
                "success. The goal-blind reference sends the scripted controller to the mean of the 50 "
                "training goals instead of the true goal (real episodes; passing through the goal counts).",
        "versions": versions(),
    }


# ---------------------------------------------------------------------------- training
def ppo_settings(spec: dict[str, Any]) -> dict[str, Any]:
    """PPO's keyword arguments from a JSON-able setting of :data:`SETTINGS`: ``learning_rate``
    ``"lin_<x>"`` is a linear decay from x to 0 (rl-zoo's, :func:`benchmarks.harness.zoo.schedule`),
    ``policy_kwargs.activation_fn`` ``"tanh"`` or ``"relu"``.

    >>> kw = ppo_settings({"learning_rate": "lin_3e-4", "policy_kwargs": {"activation_fn": "tanh"}})
    >>> round(kw["learning_rate"](0.5), 6), kw["policy_kwargs"]["activation_fn"].__name__
    (0.00015, 'Tanh')
    """
    import torch

    from benchmarks.harness.zoo import schedule

    kw = dict(spec)
    if "learning_rate" in kw:
        kw["learning_rate"] = schedule(kw["learning_rate"])
    if "policy_kwargs" in kw:
        pk = dict(kw["policy_kwargs"])
        if isinstance(pk.get("activation_fn"), str):
            pk["activation_fn"] = {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU}[pk["activation_fn"]]
        kw["policy_kwargs"] = pk
    return kw


def result_path(out: Path, setting: str, seed: int, steps: int, goal: str, task: str = TASK) -> Path:
    """Where one (setting, seed, goal, steps) run writes its result."""
    return Path(out) / f"{task}_{goal}_{setting}_{steps // 1000}k_seed{seed}.json"


def train_and_evaluate(setting: str, seed: int, steps: int, goal: str, eval_every: int = 100_000,
                       task: str = TASK, cap: int = CAP, n_envs: int = N_ENVS) -> dict[str, Any]:
    """Train ``setting`` for ``steps`` on ML1's training goals and evaluate it frozen; the result's fields."""
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    torch.set_num_threads(1)
    spec = SETTINGS[setting]
    train, test = ml1_tasks(task, goal=goal)
    terminate = bool(spec.get("terminate_on_success", False))
    scale = float(spec.get("reward_scale", 1.0))
    def factory(i: int) -> Callable[[], gym.Env]:
        return lambda: Monitor(make_env(train, seed * 100 + i, cap, terminate, scale, task))

    venv: Any = DummyVecEnv([factory(i) for i in range(n_envs)])
    norm = spec.get("normalize")
    if norm:
        venv = VecNormalize(venv, gamma=float(spec["ppo"].get("gamma", 0.99)), **norm)
    venv.seed(seed)
    model = PPO("MlpPolicy", venv, seed=seed, verbose=0, device="cpu", **ppo_settings(spec["ppo"]))

    def obs_fn(obs: np.ndarray) -> np.ndarray:
        return np.asarray(venv.normalize_obs(obs)) if isinstance(venv, VecNormalize) else obs

    def policy(deterministic: bool) -> Callable[[np.ndarray], np.ndarray]:
        def act(obs: np.ndarray) -> np.ndarray:
            action, _ = model.predict(obs_fn(obs.astype(np.float32)), deterministic=deterministic)
            return np.asarray(action)
        return act

    eval_raw = raw_env(task, cap, seed=seed + 12345)
    curve: list[dict[str, Any]] = []
    eval_seconds = [0.0]

    class Curve(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.next = eval_every
            self.outcomes: list[float] = []

        def _on_step(self) -> bool:
            for done, info in zip(self.locals["dones"], self.locals["infos"], strict=True):
                if done:
                    self.outcomes.append(float(info.get("is_success", False)))
            if self.num_timesteps >= self.next:
                self.next += eval_every
                t0 = time.time()
                held = run_episodes(eval_raw, test, policy(True), cap, seed=seed)["success"]
                eval_seconds[0] += time.time() - t0
                point = {"step": int(self.num_timesteps), "heldout_deterministic": held,
                         "train_success": round(float(np.mean(self.outcomes)), 4) if self.outcomes else None,
                         "train_episodes": len(self.outcomes)}
                curve.append(point)
                print(f"[{setting} {goal} seed{seed}] {point}", flush=True)
                self.outcomes = []
            return True

    t0 = time.time()
    model.learn(steps, callback=Curve() if eval_every > 0 else None)
    train_wall = time.time() - t0 - eval_seconds[0]
    if isinstance(venv, VecNormalize):
        venv.training = False
        venv.norm_reward = False
    t1 = time.time()
    det = run_episodes(eval_raw, test, policy(True), cap, seed=seed)
    sto = run_episodes(eval_raw, test, policy(False), cap, seed=seed)
    on_train = run_episodes(eval_raw, train, policy(True), cap, seed=seed)
    venv.close()
    return {
        "suite": SUITE, "task": task, "benchmark": f"metaworld.ML1({task!r}, seed={BENCHMARK_SEED})",
        "goal": goal, "setting": setting, "settings": spec, "seed": seed, "steps": steps,
        "algorithm": "PPO", "n_envs": n_envs, "cap": cap, "reward_function_version": REWARD_FUNCTION_VERSION,
        "heldout": {"goals": len(test), "deterministic": det, "stochastic": sto},
        "train_goals": {"goals": len(train), "deterministic": on_train},
        "curve": curve,
        "train_wall_s": round(train_wall, 1), "steps_per_s": round(steps / max(train_wall, 1e-9), 1),
        "eval_wall_s": round(time.time() - t1 + eval_seconds[0], 1),
        "note": "held-out: ML1's 50 test goals, one episode each, frozen weights and VecNormalize "
                "statistics; success at any step (an episode stops at its first success).",
        "versions": versions(), "threads": {"torch": torch.get_num_threads(),
                                             "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS")},
    }


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--setting", choices=sorted(SETTINGS), default="norm")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int, default=200_000)
    p.add_argument("--goal", choices=("visible", "hidden"), default="visible")
    p.add_argument("--out", type=Path, default=RESULTS)
    p.add_argument("--eval-every", type=int, default=100_000,
                   help="held-out evaluation every this many steps (0: only at the end)")
    p.add_argument("--references", action="store_true",
                   help="write the scripted-policy and mean-goal references instead of training")
    p.add_argument("--force", action="store_true", help="overwrite an existing result file")
    args = p.parse_args(argv)
    if args.steps <= 0 or args.steps > 3_000_000:
        p.error(f"--steps must be positive and at most 3M (the calibration's budget a run), got {args.steps}")
    if args.eval_every <= 0:
        p.error(f"--eval-every must be positive, got {args.eval_every}")
    seeds_problem = bad_seeds([args.seed])
    if seeds_problem:
        p.error(seeds_problem)
    if args.references:
        write_result(Path(args.out) / f"{TASK}_references.json", references())
        return 0
    path = result_path(args.out, args.setting, args.seed, args.steps, args.goal)
    if path.exists() and not args.force:
        print(f"{path} exists: skipped (--force to rerun)")
        return 0
    write_result(path, train_and_evaluate(args.setting, args.seed, args.steps, args.goal, args.eval_every))
    return 0


if __name__ == "__main__":
    sys.exit(main())
