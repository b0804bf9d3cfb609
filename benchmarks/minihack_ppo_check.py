"""Check that vanilla PPO with the MiniHack glyph CNN learns MiniHack-Room-Monster-5x5.

Vanilla Stable-Baselines3 PPO (no experience), 8 envs, lr 3e-4, n_steps 128, batch 256,
4 epochs, entropy 0.01, :class:`integrations.minihack.GlyphCNNExtractor`. A callback
tracks the success rate over the last 100 finished episodes; the script writes the steps
at which it first reached 50/80/90 %, the final rate, the speed and the library versions
to ``benchmarks/results/minihack_ppo_check_seed{seed}.json``. Target: 90 % within 60k
steps. Note that a random policy already succeeds about 80 % of the time on this task
(random start and stairs in a 5x5 room, 100 steps), so 50 % and 80 % come at once.

Run::

    .venv/bin/python benchmarks/minihack_ppo_check.py --seed 0
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections import deque
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback

from integrations.minihack import make_minihack_vec_env, minihack_policy_kwargs

THRESHOLDS = (0.5, 0.8, 0.9)
RESULTS_DIR = Path(__file__).resolve().parent / "results"


class RollingSuccess(BaseCallback):
    """Success rate over the last ``window`` finished episodes, and when it first crossed thresholds.

    Reads ``info["is_success"]`` on the last step of each episode (set by
    :class:`integrations.minihack.MiniHackSuccess`). Rates count only once ``window``
    episodes have finished.
    """

    def __init__(self, window: int = 100, thresholds: tuple[float, ...] = THRESHOLDS) -> None:
        super().__init__()
        self.window = window
        self.recent: deque[bool] = deque(maxlen=window)
        self.thresholds = thresholds
        self.first_reached: dict[float, int | None] = dict.fromkeys(thresholds)
        self.episodes = 0
        self.successes = 0
        self.curve: list[dict[str, Any]] = []

    @property
    def rate(self) -> float | None:
        if len(self.recent) < self.window:
            return None
        return float(np.mean(self.recent))

    def _on_step(self) -> bool:
        for done, info in zip(self.locals["dones"], self.locals["infos"], strict=True):
            if not done:
                continue
            success = bool(info["is_success"])
            self.recent.append(success)
            self.episodes += 1
            self.successes += int(success)
            rate = self.rate
            if rate is not None:
                for t in self.thresholds:
                    if self.first_reached[t] is None and rate >= t:
                        self.first_reached[t] = int(self.num_timesteps)
        return True

    def _on_rollout_end(self) -> None:
        self.curve.append(
            {"steps": int(self.num_timesteps), "episodes": self.episodes, "success": self.rate}
        )


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for pkg in ("torch", "stable-baselines3", "gymnasium", "minihack", "nle", "numpy"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "missing"
    return out


def run(
    env_id: str, steps: int, seed: int, n_envs: int = 8, torch_threads: int = 1
) -> dict[str, Any]:
    """Train vanilla PPO and return the result record (see the module docstring)."""
    torch.set_num_threads(torch_threads)
    hyper = {
        "learning_rate": 3e-4,
        "n_steps": 128,
        "batch_size": 256,
        "n_epochs": 4,
        "ent_coef": 0.01,
    }
    venv = make_minihack_vec_env(env_id, n_envs=n_envs, seed=seed)
    model = PPO(
        "MultiInputPolicy",
        venv,
        seed=seed,
        device="cpu",
        verbose=0,
        policy_kwargs=minihack_policy_kwargs(),
        **hyper,
    )
    tracker = RollingSuccess()
    start = time.perf_counter()
    model.learn(steps, callback=tracker)
    wall = time.perf_counter() - start
    venv.close()
    return {
        "benchmark": "minihack_ppo_check",
        "env_id": env_id,
        "seed": seed,
        "n_envs": n_envs,
        "total_steps": int(model.num_timesteps),
        "hyperparameters": hyper,
        "policy": "MultiInputPolicy + GlyphCNNExtractor (minihack_policy_kwargs())",
        "window_episodes": tracker.window,
        "steps_to_success": {f"{int(t * 100)}%": tracker.first_reached[t] for t in THRESHOLDS},
        "final_success": tracker.rate,
        "episodes": tracker.episodes,
        "overall_success": tracker.successes / max(tracker.episodes, 1),
        "wall_s": round(wall, 1),
        "steps_per_s": round(model.num_timesteps / wall, 1),
        "torch_threads": torch_threads,
        "versions": _versions(),
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "curve": tracker.curve,
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60_000, help="environment steps (all envs)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--env-id", default="MiniHack-Room-Monster-5x5-v0")
    parser.add_argument("--n-envs", type=int, default=8)
    parser.add_argument(
        "--torch-threads", type=int, default=1,
        help="torch intra-op threads (1 is fastest for these tiny nets on a shared CPU)",
    )
    parser.add_argument(
        "--out", type=Path, default=None,
        help="result file (default benchmarks/results/minihack_ppo_check_seed{seed}.json)",
    )
    args = parser.parse_args(argv)
    if args.steps <= 0 or args.n_envs <= 0 or args.torch_threads <= 0:
        parser.error("--steps, --n-envs and --torch-threads must be positive")
    result = run(args.env_id, args.steps, args.seed, args.n_envs, args.torch_threads)
    out = args.out or RESULTS_DIR / f"minihack_ppo_check_seed{args.seed}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    reached = ", ".join(f"{k}: {v}" for k, v in result["steps_to_success"].items())
    print(
        f"{result['env_id']} seed {result['seed']}: steps to rolling success {reached}; "
        f"final {result['final_success']}; {result['steps_per_s']} steps/s -> {out}"
    )
    return result


if __name__ == "__main__":
    main()
