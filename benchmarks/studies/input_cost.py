"""What SB3's default policy pays for the experience keys: their number or their width.

PPO with SB3's default policy (``MultiInputPolicy``: a ``CombinedExtractor`` that flattens
every key and concatenates them) trains on MiniHack-Room-5x5-v0 with zero-filled extra Dict
keys added by a :class:`PaddedKeys` VecEnv wrapper: no bank, no retrieval, no manager, so
only the policy's and SB3's own work per key (``obs_as_tensor``, ``preprocess_obs``,
``DictRolloutBuffer``'s copies, the wider first layer) is timed. The layouts:

* ``none``: no extra key (plain PPO);
* ``full``: the wrapper's ``experience_input="full"`` keys: ``(k, d)``, ``(k,)``, ``(k,)``
  (k=4, d=16: 3 keys, 72 values);
* ``one-wide``: one key of the same 72 values;
* ``three-narrow``: three keys of ``d + 1`` = 17 values in all (15, 1, 1);
* ``compact``: the wrapper's ``experience_input="compact"`` key: ``(d + 1,)``, 17 values.

``full`` against ``one-wide`` (and ``three-narrow`` against ``compact``) is the price of
the key count at equal width; ``full`` against ``three-narrow`` (and ``one-wide`` against
``compact``) the price of the width at equal key count. Arms alternate within each round;
each round's steps/s are divided by that round's ``none``, and the median over rounds is
reported; so are steps per CPU second of this process (``time.process_time``: everything runs
in it, one torch thread, a ``DummyVecEnv``), which a shared machine's load disturbs less than
the wall-clock. Then SB3's own work per env step alone (:func:`policy_side`: collection and
update on a fixed batch of observations, no env; the layouts take turns, the fastest of
``--repeats`` kept), which the load
disturbs least: the extra microseconds per step of each layout against ``none``.

Run::

    python -m benchmarks.studies.input_cost                  # 3 rounds x 16384 steps
    python -m benchmarks.studies.input_cost --steps 4096 --rounds 1
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from stable_baselines3 import PPO
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper
from stable_baselines3.common.vec_env.base_vec_env import VecEnvObs, VecEnvStepReturn

from benchmarks.harness.config import load_hyperparams
from benchmarks.harness.result_file import write_result
from benchmarks.harness.run import PPO_KEYS, versions

__all__ = ["LAYOUTS", "PaddedKeys", "measure", "main"]

RESULTS = Path(__file__).resolve().parents[1] / "results"

#: the extra keys' shapes of each layout (k=4 entries of d=16 values, the MiniHack default)
LAYOUTS: dict[str, tuple[tuple[int, ...], ...]] = {
    "none": (),
    "full": ((4, 16), (4,), (4,)),
    "one-wide": ((72,),),
    "three-narrow": ((15,), (1,), (1,)),
    "compact": ((17,),),
}


class PaddedKeys(VecEnvWrapper):
    """Adds zero-filled float32 Box keys ``pad0``, ``pad1``... of ``shapes`` to a Dict observation."""

    def __init__(self, venv: VecEnv, shapes: tuple[tuple[int, ...], ...]) -> None:
        base = venv.observation_space
        if not isinstance(base, spaces.Dict):
            raise ValueError(f"PaddedKeys needs a Dict observation space, got {base}")
        self.shapes = {f"pad{i}": shape for i, shape in enumerate(shapes)}
        parts = dict(base.spaces)
        parts.update({key: spaces.Box(-np.inf, np.inf, shape, np.float32) for key, shape in self.shapes.items()})
        super().__init__(venv, observation_space=spaces.Dict(parts))

    def _pad(self, obs: Any) -> dict[str, np.ndarray]:
        out = dict(obs)
        out.update({key: np.zeros((self.num_envs, *shape), np.float32) for key, shape in self.shapes.items()})
        return out

    def reset(self) -> VecEnvObs:
        return self._pad(self.venv.reset())

    def step_wait(self) -> VecEnvStepReturn:
        obs, rewards, dones, infos = self.venv.step_wait()
        for i in np.flatnonzero(dones).tolist():
            term = infos[i].get("terminal_observation")
            if term is not None:
                infos[i]["terminal_observation"] = {**term, **{key: np.zeros(shape, np.float32)
                                                               for key, shape in self.shapes.items()}}
        return self._pad(obs), rewards, dones, infos


def measure(env_id: str, layout: str, steps: int, seed: int) -> dict[str, Any]:
    """Train PPO with SB3's default policy for ``steps`` on ``env_id`` padded with ``layout``;
    time ``model.learn`` only."""
    from integrations.sb3.env_families import family_of

    hyper = load_hyperparams(env_id)
    env = PaddedKeys(family_of(env_id).make_vec(env_id, int(hyper["n_envs"]), seed), LAYOUTS[layout])
    model = PPO("MultiInputPolicy", env, seed=seed, **{k: hyper[k] for k in PPO_KEYS if k in hyper})
    t0, c0 = time.perf_counter(), time.process_time()
    model.learn(steps)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    env.close()
    return {"env_id": env_id, "layout": layout, "steps": int(model.num_timesteps), "wall_s": wall,
            "steps_per_s": model.num_timesteps / wall, "cpu_s": cpu, "steps_per_cpu_s": model.num_timesteps / cpu,
            "extra_keys": len(LAYOUTS[layout]), "extra_values": int(sum(np.prod(s) for s in LAYOUTS[layout]))}


class _PolicySide:
    """One layout's PPO model, ready to time SB3's own work on a fixed batch of observations."""

    def __init__(self, env_id: str, layout: str, seed: int) -> None:
        from integrations.sb3.env_families import family_of

        hyper = load_hyperparams(env_id)
        self.env = PaddedKeys(family_of(env_id).make_vec(env_id, int(hyper["n_envs"]), seed), LAYOUTS[layout])
        self.model = PPO("MultiInputPolicy", self.env, seed=seed, **{k: hyper[k] for k in PPO_KEYS if k in hyper})
        self.model.learn(self.model.n_steps * self.env.num_envs)  # one rollout: the logger, the buffer, an obs
        self.steps = self.model.n_steps * self.env.num_envs
        self.collect: list[float] = []
        self.train: list[float] = []

    def time_once(self) -> None:
        from stable_baselines3.common.utils import obs_as_tensor

        model, obs, buf = self.model, self.model._last_obs, self.model.rollout_buffer
        starts = np.zeros(self.env.num_envs, bool)
        rewards = np.zeros(self.env.num_envs, np.float32)
        buf.reset()
        t0 = time.perf_counter()
        for _ in range(model.n_steps):
            with torch.no_grad():
                actions, values, log_probs = model.policy(obs_as_tensor(obs, model.device))  # type: ignore[arg-type]
            buf.add(obs, actions.numpy().reshape(-1, 1), rewards, starts, values, log_probs)  # type: ignore[arg-type]
        self.collect.append(time.perf_counter() - t0)
        buf.compute_returns_and_advantage(values, starts)
        t0 = time.perf_counter()
        model.train()
        self.train.append(time.perf_counter() - t0)


def policy_side(env_id: str, layouts: list[str], seed: int, repeats: int = 21) -> dict[str, dict[str, float]]:
    """SB3's own work per env step of each layout, no env stepped: one rollout's collection
    (``obs_as_tensor``, the policy's forward pass, ``DictRolloutBuffer.add``, ``n_steps`` times on
    one batch of observations) and one update (``model.train()``: ``n_epochs`` over the buffer).
    The layouts take turns ``repeats`` times; the fastest of each is kept (a shared machine's
    load only ever adds time), in microseconds per env step."""
    models = {layout: _PolicySide(env_id, layout, seed) for layout in layouts}
    for _ in range(repeats):
        for m in models.values():
            m.time_once()
    out = {}
    for layout, m in models.items():
        m.env.close()
        out[layout] = {"collect_us_per_step": 1e6 * min(m.collect) / m.steps,
                       "train_us_per_step": 1e6 * min(m.train) / m.steps,
                       "policy_side_us_per_step": 1e6 * (min(m.collect) + min(m.train)) / m.steps}
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    warnings.filterwarnings("ignore")
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env", default="MiniHack-Room-5x5-v0")
    p.add_argument("--steps", type=int, default=16384)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--torch-threads", type=int, default=1)
    p.add_argument("--layouts", nargs="*", default=list(LAYOUTS), choices=list(LAYOUTS))
    p.add_argument("--repeats", type=int, default=21, help="repeats of the policy-side timing (the fastest kept)")
    p.add_argument("--no-pieces", action="store_true", help="skip the policy-side timing (no env stepped)")
    p.add_argument("--out", type=Path, default=RESULTS / "input-cost.json")
    args = p.parse_args(argv)
    layouts = ["none", *[x for x in args.layouts if x != "none"]]
    torch.set_num_threads(args.torch_threads)
    runs: list[dict[str, Any]] = []
    for r in range(args.rounds):
        for layout in layouts:
            res = measure(args.env, layout, args.steps, args.seed + r)
            res["round"] = r
            runs.append(res)
            print(f"round {r} {layout:14} {res['steps_per_s']:8.0f} steps/s ({res['wall_s']:.1f} s)", flush=True)
    summary: dict[str, Any] = {}
    print(f"\n{'layout':14} {'keys':>5} {'values':>7} {'steps/s':>9} {'median x none':>14} {'steps/cpu-s':>11} "
          f"{'cpu x none':>12}")
    for layout in layouts:
        mine = [x for x in runs if x["layout"] == layout]
        if not mine:  # --rounds 0: the policy-side timing only
            summary[layout] = {"extra_keys": len(LAYOUTS[layout]),
                               "extra_values": int(sum(np.prod(x) for x in LAYOUTS[layout]))}
            continue
        pairs = [(x, y) for x in mine for y in runs if y["layout"] == "none" and y["round"] == x["round"]]
        summary[layout] = {
            "extra_keys": mine[0]["extra_keys"], "extra_values": mine[0]["extra_values"],
            "steps_per_s": float(np.mean([x["steps_per_s"] for x in mine])),
            "ratio_to_none_median_of_rounds": float(np.median([x["steps_per_s"] / y["steps_per_s"] for x, y in pairs])),
            "steps_per_cpu_s": float(np.mean([x["steps_per_cpu_s"] for x in mine])),
            "cpu_ratio_to_none_median_of_rounds": float(np.median([x["steps_per_cpu_s"] / y["steps_per_cpu_s"]
                                                                   for x, y in pairs]))}
        s = summary[layout]
        print(f"{layout:14} {s['extra_keys']:5d} {s['extra_values']:7d} {s['steps_per_s']:9.0f} "
              f"{s['ratio_to_none_median_of_rounds']:14.2f} {s['steps_per_cpu_s']:11.0f} "
              f"{s['cpu_ratio_to_none_median_of_rounds']:12.2f}")
    if not args.no_pieces:
        print(f"\nSB3's own work per env step, no env (fastest of {args.repeats}): {'layout':14} {'collect':>8} "
              f"{'train':>8} {'total us':>9} {'+ us':>6}")
        for layout, times in policy_side(args.env, layouts, args.seed, args.repeats).items():
            summary[layout].update(times)
        for layout in layouts:
            s = summary[layout]
            s["policy_side_extra_us_per_step"] = s["policy_side_us_per_step"] - summary["none"]["policy_side_us_per_step"]
            print(f"{'':46}{layout:14} {s['collect_us_per_step']:8.1f} {s['train_us_per_step']:8.1f} "
                  f"{s['policy_side_us_per_step']:9.1f} {s['policy_side_extra_us_per_step']:6.1f}")
    result = {"runs": runs, "summary": summary, "args": {k: str(v) for k, v in vars(args).items()},
              "versions": versions(), "command": "python -m benchmarks.studies.input_cost " + " ".join(sys.argv[1:] if argv is None else argv)}
    write_result(args.out, result)
    return result


if __name__ == "__main__":
    main()
