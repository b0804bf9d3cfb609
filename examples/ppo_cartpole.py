"""PPO + Complementary RL on a classic control env: the two added lines, then save and inspect.

Run::

    python examples/ppo_cartpole.py                      # CartPole-v1, 50k steps
    python examples/ppo_cartpole.py --env Acrobot-v1 --steps 20000 --out runs/acrobot
"""

from __future__ import annotations

import argparse

import gymnasium as gym
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env

from experience_wrappers import ExperienceBank, ExperienceWrapper
from experience_wrappers.inspect import format_summary, summarise
from integrations.sb3 import CRLCallback, save_crl


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env", default="CartPole-v1")
    p.add_argument("--steps", type=int, default=50_000)
    p.add_argument("--out", default="runs/ppo_cartpole")
    args = p.parse_args(argv)
    gym.spec(args.env)  # an unknown id fails here, with gymnasium's message

    bank = ExperienceBank()
    venv = make_vec_env(args.env, n_envs=4, seed=0, wrapper_class=ExperienceWrapper,  # added line 1
                        wrapper_kwargs={"bank": bank})
    model = PPO("MultiInputPolicy", venv, n_steps=256, seed=0, verbose=0)
    model.learn(args.steps, callback=CRLCallback())                                  # added line 2

    path = save_crl(args.out, model)  # model.zip + experience/ (bank, extractor, manager)
    print(format_summary(summarise(bank)))
    print(f"saved to {path}; inspect with: python -m experience_wrappers.inspect {path}")


if __name__ == "__main__":
    main()
