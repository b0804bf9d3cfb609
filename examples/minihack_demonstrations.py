"""MiniHack with demonstrations as initial experience: a scripted navigator's episodes fill the
bank before training, and the action prior shows the agent what was done from similar states.

Run::

    python examples/minihack_demonstrations.py --env MiniHack-KeyRoom-S5-v0 --demos 100 --steps 100000
"""

from __future__ import annotations

import argparse

from stable_baselines3 import PPO

from experience_wrappers import ExperienceBank, ExperienceWrapper
from experience_wrappers.inspect import format_summary, summarise
from integrations.demos import ingest_demonstrations
from integrations.minihack import (
    GlyphCNNExtractor,
    MiniHackKeyEncoder,
    make_minihack_vec_env,
    scripted_demonstrations,
)
from integrations.sb3 import (
    ActionPriorPolicy,
    CRLCallback,
    crl_policy_kwargs,
    evaluate_with_and_without_experience,
)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env", default="MiniHack-Room-5x5-v0")
    p.add_argument("--demos", type=int, default=20)
    p.add_argument("--steps", type=int, default=50_000)
    p.add_argument("--eval-episodes", type=int, default=20)
    args = p.parse_args(argv)

    probe = make_minihack_vec_env(args.env, n_envs=1)
    space = probe.observation_space
    probe.close()
    bank = ExperienceBank()
    venv = make_minihack_vec_env(args.env, n_envs=4, seed=0, wrapper_class=ExperienceWrapper,
                                 wrapper_kwargs={"bank": bank, "key_encoder": MiniHackKeyEncoder(space),
                                                 "action_prior": True, "retrieve_every": 1})
    demos = scripted_demonstrations(args.env, n_episodes=args.demos, seed=1)
    manager = venv.envs[0].get_wrapper_attr("manager")
    segments = ingest_demonstrations(manager, demos, segment_every=1)
    print(f"{len(demos)} demonstrations -> {segments} segments; {len(bank)} entries before training")

    model = PPO(ActionPriorPolicy, venv, n_steps=128, batch_size=256, n_epochs=4, ent_coef=0.01, seed=0,
                policy_kwargs=crl_policy_kwargs(base_extractor_class=GlyphCNNExtractor))
    model.learn(args.steps, callback=CRLCallback(prior_weight=(1.0, 0.0)))
    print(format_summary(summarise(bank)))
    res = evaluate_with_and_without_experience(model, n_episodes=args.eval_episodes)
    for setting, stats in res.items():
        print(f"{setting}: success {stats['success']:.2f}, return {stats['return']:.2f}")


if __name__ == "__main__":
    main()
