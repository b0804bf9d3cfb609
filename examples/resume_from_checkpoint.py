"""Checkpoints that keep the bank, the extractor and the manager; resume from the last one.

Run::

    python examples/resume_from_checkpoint.py --steps 20000 --out runs/checkpoints
"""

from __future__ import annotations

import argparse
from pathlib import Path

from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import CallbackList
from stable_baselines3.common.env_util import make_vec_env

from experience_wrappers import ExperienceBank, ExperienceWrapper
from integrations.sb3 import CRLCallback, CRLCheckpointCallback, find_experience, load_crl


def make_env(bank: ExperienceBank):
    return make_vec_env("CartPole-v1", n_envs=4, seed=0, wrapper_class=ExperienceWrapper,
                        wrapper_kwargs={"bank": bank})


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=20_000)
    p.add_argument("--out", type=Path, default=Path("runs/checkpoints"))
    args = p.parse_args(argv)
    if args.steps < 4:
        p.error(f"--steps must be at least 4 (four checkpoints), got {args.steps}")
    if args.out.exists() and any(args.out.glob("cartpole_*_steps*")):
        # its newest checkpoint would be taken for this run's, and this run would overwrite the others
        p.error(f"--out {args.out} holds the checkpoints of an earlier run: give a folder of its own")

    model = PPO("MultiInputPolicy", make_env(ExperienceBank()), n_steps=256, seed=0)
    # CheckpointCallback counts calls, one per n_envs steps; PPO runs whole rollouts (n_steps calls), so a
    # checkpoint at most once a rollout (a few --steps gave one per call: 256 checkpoints)
    every = max(args.steps // 4 // model.n_envs, model.n_steps)
    checkpoints = CRLCheckpointCallback(save_freq=every, save_path=str(args.out), name_prefix="cartpole")
    model.learn(args.steps, callback=CallbackList([CRLCallback(), checkpoints]))
    last = max(args.out.glob("cartpole_*_steps.zip"), key=lambda z: int(z.stem.split("_")[-2]))
    print(f"checkpoints: {sorted(z.name for z in args.out.glob('*.zip'))}; resuming from {last.name}")

    env = make_env(ExperienceBank())  # built as for training; load_crl fills its bank and manager
    model = load_crl(last, env)
    print(f"restored {len(find_experience(env)[0][0].bank)} entries at {model.num_timesteps} steps")
    model.learn(args.steps // 4, reset_num_timesteps=False, callback=CRLCallback())
    print(f"resumed to {model.num_timesteps} steps; the bank holds {len(find_experience(env)[0][0].bank)} entries")


if __name__ == "__main__":
    main()
