"""Does searching around the goal locator's guess help a policy that follows every mark it is shown?

On ML1 reach with the goal hidden, the relocating arm (``TrialMemory(run_best="located",
relocate_every=10)``) leaves cumulative success by trial 2 at 0.70 against issue 37's 0.8: a run whose
first trial fails mostly fails again. Two parts can hold it back: the guesses (the goal locator's),
and the policy's following of them. This study takes the learned policy out of the loop. The
*follower* is Meta-World's scripted reach policy sent to the mark that
:class:`~experience_wrappers.trials.run_best.RunBest` shows (the mark's hand position, read back from
key units), with Gaussian action noise; before any mark, to the mean of the training goals. A
:class:`~experience_wrappers.trials.TrialMemory` with the relocating arm's settings (no rows shown,
failures written, dense rewards) learns its goal locator from the follower's own runs of ``K = 4``
trials on ML1 reach's 50 training goals, a quarter of them with a demonstration placed first (the
scripted policy with the goal visible, as the method's training places them: the locator's labels
come from successes); then frozen copies of it run the 50
held-out goals, ``repeats`` runs each, with ``TrialMemory(search=s)`` for each ``s`` asked for (0: the
relocating arm as it is). Same env seeds for every ``s``: the differences against the first ``s`` are
paired by goal (each goal's runs averaged), with 95 % bootstrap CIs over the held-out goals.

``python -m benchmarks.studies.follower_search`` writes ``benchmarks/results/follower-search.json``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

RESULTS = Path(__file__).resolve().parents[1] / "results"
TRIALS = 4


class Follower:
    """The scripted reach policy sent to the shown mark (else the training goals' mean), plus noise."""

    def __init__(self, observation_space: Any, prior_goal: np.ndarray, noise: float, seed: int) -> None:
        from metaworld.policies import ENV_POLICY_MAP

        policy_cls: Any = ENV_POLICY_MAP["reach-v3"]
        self.policy = policy_cls()
        self.prior_goal, self.noise = prior_goal, noise
        self.rng = np.random.default_rng(seed)
        low, high = observation_space.low[:3].astype(np.float64), observation_space.high[:3].astype(np.float64)
        self.half_range = (high - low) / 2.0  # metres per key unit of the hand's three coordinates

    def goal(self, obs: dict[str, Any]) -> np.ndarray:
        """Where the follower heads: the mark (``run_best`` is an offset from here, in key units), else the prior."""
        shown = obs["run_best"]
        if shown[-1] != 1.0:
            return self.prior_goal
        return np.asarray(obs["observation"][:3], np.float64) + shown[:3] * self.half_range

    def act(self, obs: dict[str, Any]) -> np.ndarray:
        seen = np.array(obs["observation"], np.float64)
        seen[36:39] = self.goal(obs)
        action = np.asarray(self.policy.get_action(seen)) + self.rng.normal(0.0, self.noise, 4)
        return np.clip(action, -1.0, 1.0).astype(np.float32)


def _runs(make: Any, memory: Any, instances: list[int], repeats: int, prior: np.ndarray, noise: float,
          seed: int, learn: bool, demonstrations: Any = None) -> np.ndarray:
    """``repeats`` runs of ``TRIALS`` trials of each instance; success ``(runs, TRIALS)``. With
    ``demonstrations``, a quarter of the runs (as the method's training) have one placed first."""
    from experience_wrappers.trials.wrapper import trial_env

    out = []
    for r in range(repeats):
        for j, instance in enumerate(instances):
            env = trial_env(make(), memory, instances=[instance], trials=TRIALS, guided=True, learn=learn,
                            demonstrations=demonstrations, demo_ratio=0.25, seed=seed * 100_003 + r * 1009 + j)
            follower = Follower(memory.observation_space, prior, noise, seed * 100_003 + r * 1009 + j)
            obs, _ = env.reset(seed=seed * 100_003 + r * 1009 + j)
            wins = []
            for t in range(TRIALS):
                while True:
                    obs, _, terminated, truncated, info = env.step(follower.act(obs))
                    if terminated or truncated:
                        break
                wins.append(bool(info.get("success", False)))
                if t + 1 < TRIALS:
                    obs, _ = env.reset()
            env.close()
            out.append(wins)
    return np.asarray(out, bool)


def run(train_runs: int, repeats: int, searches: list[float], noise: float, seed: int) -> dict[str, Any]:
    """Train a locator on the follower's runs, then the held-out figures for each ``search``."""
    import torch

    from benchmarks.reporting.stats import bootstrap_ci
    from benchmarks.suites.trials_ml1 import ml1_reach_moves_family
    from experience_wrappers.trials import TrialMemory
    from integrations.sb3.trials_evaluation import trial_metrics

    torch.set_num_threads(1)
    t0 = time.time()
    fam = ml1_reach_moves_family(success_bonus="infinite")
    proto = fam["make"]()
    obs_space, act_space = proto.observation_space, proto.action_space
    goals = []
    for i in fam["train"]:
        proto.reset(seed=i)
        goals.append(proto.goal().copy())
    proto.close()
    prior = np.mean(goals, axis=0)
    settings = {"horizon": fam["horizon"], "exp_dim": 0, "write_failures": True, "dense_rewards": True,
                "run_best": "located", "show_entries": False, "relocate_every": 10, "seed": seed}
    trained = TrialMemory(obs_space, act_space, **settings)
    rng = np.random.default_rng(seed)
    train = [int(i) for i in rng.choice(fam["train"], train_runs)]
    training = _runs(fam["make"], trained, train, 1, prior, noise, seed, learn=True,
                     demonstrations=fam["demonstration"])
    assert trained.locator is not None
    out: dict[str, Any] = {"train_runs": train_runs, "training": trial_metrics(training),
                           "locator": {k: round(float(v), 4) for k, v in trained.locator.stats.items()},
                           "error_dims_hand": [round(float(x), 4) for x in trained.locator.error_dims[:3]],
                           "held_out": {}}
    held = list(fam["held_out"])
    per_goal: dict[float, np.ndarray] = {}  # search -> (goals, TRIALS): cumulative success, the goal's runs averaged
    for s in searches:
        frozen = TrialMemory(obs_space, act_space, **{**settings, "search": s, "train_extractor": False})
        frozen.load_weights_of(trained)
        wins = _runs(fam["make"], frozen, held, repeats, prior, noise, seed + 1, learn=False)
        # "wins": every run's successes by trial, ordered by repeat then goal (the trials suites' "successes" are
        # ordered by instance then repeat)
        out["held_out"][str(s)] = {**trial_metrics(wins), "wins": wins.astype(int).tolist()}
        cum = np.maximum.accumulate(wins, axis=1).reshape(repeats, len(held), TRIALS)
        per_goal[s] = cum.mean(0)
        if s != searches[0]:  # against the first (the same env seeds: paired by goal)
            diff = per_goal[s] - per_goal[searches[0]]
            out["held_out"][str(s)]["against_first"] = {
                f"cumulative@{t + 1}": [round(float(diff[:, t].mean()), 3),
                                        *(round(x, 3) for x in bootstrap_ci(diff[:, t]))] for t in range(TRIALS)}
        print(s, {k: v for k, v in out["held_out"][str(s)].items() if k != "wins"}, flush=True)
    out["wall_s"] = round(time.time() - t0, 1)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--train-runs", type=int, default=600, help="runs of 4 trials on training goals")
    parser.add_argument("--repeats", type=int, default=4, help="runs of each held-out goal")
    parser.add_argument("--search", type=float, nargs="+", default=[0.0, 1.0])
    parser.add_argument("--noise", type=float, default=0.1, help="the follower's action noise")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=RESULTS / "follower-search.json")
    args = parser.parse_args(argv)
    from benchmarks.harness.run import versions

    result = {"command": "python -m benchmarks.studies.follower_search", "seed": args.seed, "noise": args.noise,
              "versions": versions(), **run(args.train_runs, args.repeats, args.search, args.noise, args.seed)}
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
