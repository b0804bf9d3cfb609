"""Does one trial's dense rewards place ML1 reach's hidden goal, and can a learned summary read it?

The target ``cumulative success by trial 2 >= 0.8`` (issue 37) rests on one failed trial with
its rewards placing the goal. This study asks it offline, without a policy in the loop: a
*probe* trial of a held-out goal is Meta-World's scripted reach policy sent to other goals
(``legs`` of them in turn, action noise 0.3: the straight or bent path of a trial that went
elsewhere), 10 random hand moves before it as in ``ml1-reach-moves``; from its hand positions
and rewards, each estimator guesses the goal, scored by whether the guess lies within the
success radius (0.05) of the true goal:

* ``mean_goal``: the mean of the 50 training goals (no trial read; the prior).
* ``best_reward_point``: where the trial's reward was highest (the learning-free rule of
  :class:`~experience_wrappers.trials.run_best.RunBest` for a failed trial).
* ``reward_model_fit``: least squares of the goal under Meta-World's own reward function
  (``tolerance`` of the distance, margin from the hand's initial place): what the rewards hold,
  for an estimator that knows how they were made. Not available to the library.
* ``learned_absolute``: a set network (per-step MLP, attention and mean pooling) from the
  trial's ``(hand position, reward)`` rows to the goal, trained on probes of the 50 training
  goals only (``train_probes`` per goal), evaluated on the 50 held-out goals.
* ``learned_relative``: the same network reading positions relative to the best-reward point
  and predicting the goal's offset from it (translation-equivariant but for that point's
  absolute place, given as one more input).

``python -m benchmarks.studies.goal_from_rewards`` writes ``benchmarks/results/goal-from-rewards.json``
(about 8 minutes on 2 free cores).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

RESULTS = Path(__file__).resolve().parents[1] / "results"
RADIUS = 0.05
CAP = 150


class _Probe:
    """Probe trials of ML1 reach (goal hidden, hand moved first): the scripted policy sent elsewhere."""

    def __init__(self, seed: int) -> None:
        from metaworld.policies import ENV_POLICY_MAP

        from integrations.metaworld.ml1_trials import ML1Trials, ml1_instances

        self.rng = np.random.default_rng(seed)
        self.env = ML1Trials("reach-v3", CAP, start_moves=10, start_seed=seed + 1, success_bonus=False)
        policy_cls: Any = ENV_POLICY_MAP["reach-v3"]
        self.policy = policy_cls()
        self.train, self.held = ml1_instances()
        self.goals = {}
        for i in self.train + self.held:
            self.env.reset(seed=i)
            self.goals[i] = self.env.goal().copy()
        self.hand0 = np.asarray(self.env.raw.hand_init_pos, float)

    def trial(self, instance: int, legs: int, noise: float = 0.3) -> dict[str, Any]:
        """One probe of ``instance``: ``hand`` (observed), ``tcp`` (the reward's point), ``reward`` (Meta-World's)
        and ``obs`` (the observation it came in) per step, and ``success``."""
        others = [j for j in self.train if j != instance]
        targets = [self.goals[j] for j in self.rng.choice(others, legs, replace=False)]
        obs, _ = self.env.reset(seed=instance)
        hand, tcp, reward, seen_obs = [], [], [], []
        per = CAP // legs
        for t in range(CAP):
            seen = np.array(obs, np.float64)
            seen[36:39] = targets[min(t // per, legs - 1)]
            action = np.clip(np.asarray(self.policy.get_action(seen)) + self.rng.normal(0, noise, 4), -1, 1)
            obs, r, terminated, truncated, _ = self.env.step(action.astype(np.float32))
            hand.append(obs[:3].copy())
            seen_obs.append(obs.copy())
            tcp.append(np.array(self.env.raw.tcp_center))
            reward.append(float(r) / self.env.reward_scale)
            if terminated or truncated:
                break
        return {"hand": np.asarray(hand, np.float32), "tcp": np.asarray(tcp), "reward": np.asarray(reward, np.float32),
                "obs": np.asarray(seen_obs, np.float32), "success": bool(terminated), "goal": self.goals[instance]}


def _model_fit(trial: dict[str, np.ndarray], hand0: np.ndarray, starts: np.ndarray) -> np.ndarray:
    from metaworld.utils import reward_utils
    from scipy.optimize import least_squares

    def residual(g: np.ndarray) -> np.ndarray:
        d = np.linalg.norm(trial["tcp"] - g, axis=1)
        margin = float(np.linalg.norm(hand0 - g))
        return 10 * reward_utils.tolerance(d, bounds=(0, RADIUS), margin=margin, sigmoid="long_tail") - trial["reward"]

    fits = [least_squares(residual, g0) for g0 in starts]
    return min(fits, key=lambda f: f.cost).x


def _padded(trials: list[dict[str, np.ndarray]], relative: bool) -> tuple[Any, Any, Any, Any]:
    import torch

    n, length = len(trials), max(len(t["reward"]) for t in trials)
    rows = np.zeros((n, length, 4), np.float32)
    mask = np.zeros((n, length), bool)
    anchor = np.zeros((n, 3), np.float32)
    for j, t in enumerate(trials):
        best = t["hand"][int(np.argmax(t["reward"]))] if relative else np.zeros(3, np.float32)
        anchor[j] = best
        rows[j, :len(t["reward"]), :3] = (t["hand"] - best) * 10.0  # positions in decimetres
        rows[j, :len(t["reward"]), 3] = t["reward"] / 10.0
        mask[j, :len(t["reward"])] = True
    goals = np.asarray([t["goal"] for t in trials], np.float32)
    return torch.tensor(rows), torch.tensor(mask), torch.tensor(anchor), torch.tensor(goals)


def _learned(train: list[dict[str, np.ndarray]], test: list[dict[str, np.ndarray]], relative: bool,
             steps: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Train the set network on ``train`` probes; the guesses for ``train`` and ``test``."""
    import torch
    from torch import nn

    torch.manual_seed(seed)

    class SetNet(nn.Module):
        def __init__(self, hidden: int = 128) -> None:
            super().__init__()
            self.phi = nn.Sequential(nn.Linear(4, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
            self.att = nn.Linear(hidden, 1)
            self.rho = nn.Sequential(nn.Linear(2 * hidden + 3, hidden), nn.ReLU(), nn.Linear(hidden, 3))

        def forward(self, rows: Any, mask: Any, anchor: Any) -> Any:
            f = self.phi(rows)
            w = self.att(f).squeeze(-1).masked_fill(~mask, -1e9).softmax(-1)
            mean = (f * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
            return anchor + self.rho(torch.cat([(w[..., None] * f).sum(1), mean, anchor * 10.0], -1)) / 10.0

    net = SetNet()
    opt = torch.optim.Adam(net.parameters(), 1e-3)
    rows, mask, anchor, goals = _padded(train, relative)
    for _ in range(steps):
        idx = torch.randint(0, len(rows), (64,))
        loss = ((net(rows[idx], mask[idx], anchor[idx]) - goals[idx]) ** 2).sum(-1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        own = net(rows, mask, anchor).numpy()
        trows, tmask, tanchor, _ = _padded(test, relative)
        return own, net(trows, tmask, tanchor).numpy()


def _scores(guesses: np.ndarray, goals: np.ndarray) -> dict[str, float]:
    err = np.linalg.norm(guesses - goals, axis=1)
    return {"within_radius": round(float((err < RADIUS).mean()), 3), "median_error": round(float(np.median(err)), 4)}


def run(legs: int, train_probes: int, test_probes: int, steps: int, seed: int) -> dict[str, Any]:
    """The study's figures for probes of ``legs`` legs."""
    t0 = time.time()
    probe = _Probe(seed)
    train = [probe.trial(i, legs) for i in probe.train for _ in range(train_probes)]
    test = [probe.trial(i, legs) for i in probe.held for _ in range(test_probes)]
    goals = np.asarray([t["goal"] for t in test])
    prior = np.asarray([probe.goals[i] for i in probe.train])
    starts = np.concatenate([prior.mean(0, keepdims=True), prior[probe.rng.choice(len(prior), 8, replace=False)]])
    out: dict[str, Any] = {
        "legs": legs, "train_probes": len(train), "test_probes": len(test),
        "probe_success": round(float(np.mean([t["reward"][-1] >= 10.0 - 1e-6 for t in test])), 3),
        "mean_goal": _scores(np.repeat(prior.mean(0, keepdims=True), len(test), 0), goals),
        "best_reward_point": _scores(np.asarray([t["tcp"][int(np.argmax(t["reward"]))] for t in test]), goals),
        "reward_model_fit": _scores(np.asarray([_model_fit(t, probe.hand0, starts) for t in test]), goals)}
    train_goals = np.asarray([t["goal"] for t in train])
    for name, relative in (("learned_absolute", False), ("learned_relative", True)):
        own, guesses = _learned(train, test, relative, steps, seed)
        out[name] = {**_scores(guesses, goals), "on_training_probes": _scores(own, train_goals)}
    out["wall_s"] = round(time.time() - t0, 1)
    return out


def locator_placement(memory: Any, seed: int, held_probes: int = 4, train_probes: int = 2) -> dict[str, Any]:
    """Where a trained run's goal locator (``memory.locator``, ``TrialMemory(run_best="located")``) places
    ML1 reach's goals from one failed one-leg probe (above; its own probes, seeded ``seed``): within the
    success radius and the median error (metres, the hand's position of its guess), on the held-out goals
    and on the training goals, beside the probe's best-reward state. The rows are the memory's own: keys
    of the states the rewards came in, rewards scaled as the env scales them."""
    from integrations.metaworld.keys import HAND_HIGH, HAND_LOW

    probe = _Probe(10_000 + seed)
    out: dict[str, Any] = {"probes": "one leg, noise 0.3, failed ones only"}
    for name, instances, n in (("held_out", probe.held, held_probes), ("training", probe.train, train_probes)):
        guesses, best, goals = [], [], []
        for i in instances:
            for _ in range(n):
                t = probe.trial(i, 1)
                if t["success"]:
                    continue
                keys = memory.keys(t["obs"])
                guess = memory.locator.locate(keys, t["reward"] * probe.env.reward_scale)
                guesses.append((guess[:3] + 1.0) / 2.0 * (HAND_HIGH - HAND_LOW) + HAND_LOW)
                best.append(t["hand"][int(np.argmax(t["reward"]))])
                goals.append(t["goal"])
        out[name] = {"trials": len(goals), "locator": _scores(np.asarray(guesses), np.asarray(goals)),
                     "best_reward_state": _scores(np.asarray(best), np.asarray(goals))}
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--legs", type=int, nargs="+", default=[1, 3])
    parser.add_argument("--train-probes", type=int, default=24, help="probes per training goal")
    parser.add_argument("--test-probes", type=int, default=4, help="probes per held-out goal")
    parser.add_argument("--steps", type=int, default=3000, help="gradient steps of each set network")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=RESULTS / "goal-from-rewards.json")
    args = parser.parse_args(argv)
    result = {"command": "python -m benchmarks.studies.goal_from_rewards", "seed": args.seed,
              "radius": RADIUS, "by_legs": [run(k, args.train_probes, args.test_probes, args.steps, args.seed)
                                            for k in args.legs]}
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
