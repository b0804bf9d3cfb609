"""Train with Complementary RL, then evaluate on separate envs with and without experience.

Evaluation never writes to the bank: the evaluation env is built on the training bank with
the default ``learn=None``, so while the training env trains the bank it learns nothing.

What to expect on CartPole: nothing from experience. The observation holds the whole state,
so what the bank could show, the policy can learn from the state itself; on such tasks the
benchmarks measured the observation channel to tie (docs/what_to_use.md), and a short run's
returns with and without experience differ by noise in either direction (one run gave 243
with and 460 without). The example shows the mechanics of evaluation, not a gain.

Run::

    python examples/evaluate_with_and_without.py --steps 20000 --episodes 20
"""

from __future__ import annotations

import argparse

from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import CallbackList
from stable_baselines3.common.env_util import make_vec_env

from experience_wrappers import ExperienceBank, ExperienceWrapper
from integrations.sb3 import CRLCallback, ExperienceEvalCallback, evaluate_frozen, find_experience


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env", default="CartPole-v1")
    p.add_argument("--steps", type=int, default=20_000)
    p.add_argument("--episodes", type=int, default=20)
    args = p.parse_args(argv)

    bank = ExperienceBank()
    train = make_vec_env(args.env, n_envs=4, seed=0, wrapper_class=ExperienceWrapper,
                         wrapper_kwargs={"bank": bank})
    manager = find_experience(train)[0][0]
    evaluation = make_vec_env(args.env, n_envs=2, seed=100, wrapper_class=ExperienceWrapper,
                              wrapper_kwargs={"bank": bank, "manager": manager})
    interval = ExperienceEvalCallback(evaluation, eval_freq=max(args.steps // 4, 1), n_eval_episodes=4)
    model = PPO("MultiInputPolicy", train, n_steps=256, seed=0)
    model.learn(args.steps, callback=CallbackList([CRLCallback(), interval]))
    for h in interval.history:
        print(f"at {h['steps']} steps: " + ", ".join(f"{k} return {v['return']:.1f}" for k, v in h.items()
                                                       if k != "steps"))

    submitted = manager.episodes_submitted
    for guided in (True, False):
        mean, std = evaluate_frozen(model, evaluation, n_eval_episodes=args.episodes, guided=guided)
        print(f"{'with' if guided else 'without'} experience: return {mean:.1f} ± {std:.1f}")
    print(f"episodes handed to the bank by evaluation: {manager.episodes_submitted - submitted}")
    print("(on a fully observed task like CartPole experience is not expected to help: a gap either way is noise)")


if __name__ == "__main__":
    main()
