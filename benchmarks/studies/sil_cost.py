"""What self-imitation costs on the default path: its share of the update time and of the run.

The README's two-line form (an ``ExperienceWrapper`` per env, ``ExperiencePolicy`` with
:func:`~integrations.sb3.crl_policy_kwargs`, ``CRLCallback()`` with its defaults, self-imitation
on: 4 gradient steps of 256 replayed states after each PPO update) trains on each env, and
three clocks run in the one process: PPO's update (``model.train``, wrapped), self-imitation's
update and its per-step recording (:attr:`SelfImitationCallback.seconds
<integrations.sb3.self_imitation.SelfImitationCallback.seconds>`), and the whole run. Printed
per env: the seconds of each, self-imitation's share of the update time (its update over PPO's
plus its own) and of the run. On an env that reports no success (CartPole) the defaults turn
self-imitation off after the first episode (``only_with_success``): its share is then 0. The clocks share one process and one torch thread, so the
shares hold where the machine is busy; the seconds themselves do not.

What it does not say: whether a cheaper setting learns as well (that is a learning benchmark:
``self_imitation={"n_batches": ..., "batch_size": ...}`` arms of a suite).

Run::

    python -m benchmarks.studies.sil_cost                       # Room-5x5 and CartPole, 32768 steps
    python -m benchmarks.studies.sil_cost --envs CartPole-v1 --steps 4096
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path
from typing import Any

from benchmarks.harness.result_file import write_result

__all__ = ["measure", "main"]

RESULTS = Path(__file__).resolve().parents[1] / "results"


def measure(env_id: str, steps: int, n_envs: int = 4, seed: int = 0, n_steps: int | None = None) -> dict[str, Any]:
    """Train the two-line form on ``env_id`` for ``steps`` (PPO's ``n_steps``: SB3's 2048 unless
    given); the seconds of each part, and the shares."""
    import torch
    from stable_baselines3 import PPO

    from experience_wrappers import ExperienceBank
    from integrations.sb3 import CRLCallback, ExperiencePolicy, crl_policy_kwargs
    from integrations.sb3.env_families import build_env, family_of

    torch.manual_seed(seed)
    fam = family_of(env_id)
    env = build_env(env_id, n_envs, seed, ExperienceBank(seed=seed), family=fam)
    base_cls, base_kwargs = fam.base_extractor or (None, None)
    model = PPO(ExperiencePolicy, env, seed=seed, n_steps=2048 if n_steps is None else n_steps,
                policy_kwargs=crl_policy_kwargs(base_extractor_class=base_cls, base_extractor_kwargs=base_kwargs))
    ppo_update = [0.0]
    train = model.train

    def timed_train() -> None:
        t0 = time.perf_counter()
        train()
        ppo_update[0] += time.perf_counter() - t0

    model.train = timed_train  # type: ignore[method-assign]
    callback = CRLCallback()
    t0 = time.perf_counter()
    model.learn(steps, callback=callback)
    wall = time.perf_counter() - t0
    env.close()
    sil = callback.sil
    assert sil is not None, "CRLCallback() has self-imitation on by default"
    update, record = sil.seconds["update"], sil.seconds["record"]
    return {"env_id": env_id, "steps": int(model.num_timesteps), "n_envs": n_envs, "seed": seed,
            "n_steps": model.n_steps, "self_imitation_active": sil.active,
            "n_batches": sil.n_batches, "batch_size": sil.batch_size,
            "wall_s": round(wall, 2), "ppo_update_s": round(ppo_update[0], 4), "sil_update_s": round(update, 4),
            "sil_record_s": round(record, 4),
            "sil_share_of_update": round(update / max(update + ppo_update[0], 1e-9), 4),
            "sil_share_of_run": round((update + record) / max(wall, 1e-9), 4),
            "replay_states": sil.replay.counts()}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    warnings.filterwarnings("ignore")
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--envs", nargs="+", default=["MiniHack-Room-5x5-v0", "CartPole-v1"])
    p.add_argument("--steps", type=int, default=32768, help="4 rollouts of 4 envs x 2048 steps: 3 SIL updates")
    p.add_argument("--n-envs", type=int, default=4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--n-steps", type=int, default=None, help="PPO's n_steps (default: SB3's 2048)")
    p.add_argument("--note", default="", help="what else the machine ran (saved with the figures)")
    p.add_argument("--out", type=Path, default=RESULTS / "sil-cost.json")
    args = p.parse_args(argv)
    if args.steps <= 0 or args.n_envs <= 0:
        p.error("--steps and --n-envs must be positive")
    import torch

    torch.set_num_threads(1)
    rows = [measure(env_id, args.steps, args.n_envs, args.seed, args.n_steps) for env_id in args.envs]
    print(f"{'env':24} {'wall s':>7} {'PPO update s':>13} {'SIL update s':>13} {'SIL record s':>13} "
          f"{'SIL / update':>13} {'SIL / run':>10}")
    for r in rows:
        print(f"{r['env_id']:24} {r['wall_s']:7.1f} {r['ppo_update_s']:13.1f} {r['sil_update_s']:13.2f} "
              f"{r['sil_record_s']:13.2f} {r['sil_share_of_update']:13.1%} {r['sil_share_of_run']:10.1%}")
    out = {"args": {k: str(v) for k, v in vars(args).items()}, "runs": rows}
    if args.out:
        write_result(args.out, out)
    return out


if __name__ == "__main__":
    main()
