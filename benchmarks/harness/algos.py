"""The on-policy algorithms a run can train: SB3's PPO and A2C, sb3-contrib's RecurrentPPO and
MaskablePPO (the ``sb3`` extra)."""

from __future__ import annotations

import inspect
from typing import Any

from stable_baselines3.common.base_class import BaseAlgorithm

__all__ = ["ALGOS", "algorithm_class", "check_algo_arm", "resolve_algo"]

#: ``--algo`` names and the class each stands for (module, attribute).
ALGOS = {"ppo": ("stable_baselines3", "PPO"), "a2c": ("stable_baselines3", "A2C"),
         "recurrent-ppo": ("sb3_contrib", "RecurrentPPO"), "maskable-ppo": ("sb3_contrib", "MaskablePPO")}


def algorithm_class(name: str) -> type[BaseAlgorithm]:
    """The class of ``name`` (ValueError lists the known names; ImportError names the extra).

    >>> algorithm_class("a2c").__name__
    'A2C'
    """
    if name not in ALGOS:
        raise ValueError(f"unknown algorithm {name!r}; known: {sorted(ALGOS)}")
    module, attr = ALGOS[name]
    try:
        mod = __import__(module, fromlist=[attr])
    except ImportError as exc:
        raise ImportError(f"--algo {name} needs sb3-contrib: pip install 'complementary-rl[sb3]'") from exc
    return getattr(mod, attr)


def check_algo_arm(name: str, arm: Any) -> None:
    """Raise ValueError if ``arm`` needs PPO's own pieces and ``name`` is another algorithm.

    Self-imitation updates a PPO policy.
    """
    if name == "ppo":
        return
    needs = []
    if getattr(arm, "imitation", None) is not None:
        needs.append("self-imitation")
    if needs:
        raise ValueError(f"arm {arm.name!r} uses {', '.join(needs)}, which --algo {name} does not support; "
                         "use --algo ppo or an arm without them (ppo, crl, crl-obs, ...)")


def resolve_algo(name: str, policy: Any, kwargs: dict[str, Any]) -> tuple[type[BaseAlgorithm], Any, dict[str, Any]]:
    """The class, the policy (the LSTM variant for RecurrentPPO) and the kwargs it accepts.

    >>> cls, policy, kw = resolve_algo("a2c", "MultiInputPolicy", {"n_steps": 8, "batch_size": 64})
    >>> cls.__name__, policy, kw
    ('A2C', 'MultiInputPolicy', {'n_steps': 8})
    """
    cls = algorithm_class(name)
    if name == "recurrent-ppo" and isinstance(policy, str):
        policy = {"MultiInputPolicy": "MultiInputLstmPolicy", "MlpPolicy": "MlpLstmPolicy",
                  "CnnPolicy": "CnnLstmPolicy"}[policy]
    accepted = inspect.signature(cls.__init__).parameters
    return cls, policy, {k: v for k, v in kwargs.items() if k in accepted}
