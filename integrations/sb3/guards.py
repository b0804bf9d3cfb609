"""What :class:`~integrations.sb3.CRLCallback` checks before it touches a model.

* The algorithm must be on-policy with a rollout buffer (PPO, A2C): the callback regroups
  the buffer's advantages and credits whole rollouts. Off-policy algorithms (DQN, SAC, TD3,
  DDPG) learn from a replay buffer and are refused with a clear error at the start of
  ``learn``, not with an ``AttributeError`` at the first rollout's end.
* One ``CRLCallback`` per ``learn`` call: two of them (say in one ``CallbackList``) would
  count every rollout twice and regroup the advantages twice. A new ``learn`` call (a
  resumed run with a fresh callback) is of course fine.
* Before a :class:`~integrations.sb3.RollInCallback` of the same ``learn`` call, where it
  regroups advantages (:func:`check_rollin_order`): after it, its normalisation would undo the
  zeros the roll-in callback wrote on guide-acted steps.
* ``save_crl``, ``load_crl`` and the callback's env discovery take the vectorised env
  (:func:`check_vec_env`): a single gymnasium env (an ``ExperienceWrapper``) is refused
  with a ``TypeError`` that says how to wrap it, before anything is read or changed.
"""

from __future__ import annotations

import weakref
from typing import Any

import gymnasium as gym
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm
from stable_baselines3.common.vec_env import VecEnv, unwrap_vec_wrapper

from experience_wrappers.manager import ExperienceSource

from .rollin_env import GuidedRollInVecEnv

__all__ = ["check_callback", "check_rollin_order", "check_vec_env", "on_policy", "check_on_policy_class", "check_action_space"]

def check_callback(callback: Any, managers: list[ExperienceSource]) -> None:
    """Raise unless ``callback.model`` is on-policy and ``callback`` is the only CRLCallback of this ``learn``.

    The claim is kept on the managers of the env being trained (``manager.learn_claim``: the
    ``start_time`` of the ``learn`` call that a CRLCallback claimed, and that callback): two
    CRLCallbacks of one ``learn`` train on the same managers.

    Raises:
        TypeError: the algorithm is not an on-policy one with a rollout buffer.
        ValueError: another CRLCallback already runs in this ``learn`` call.
    """
    model = on_policy(callback.model, "CRLCallback")
    check_action_space(model.action_space, "CRLCallback")
    session = getattr(model, "start_time", None)  # set by SB3 at the start of every learn() call
    for manager in managers:
        claim = getattr(manager, "learn_claim", None)
        if claim is not None and session is not None and claim[0] == session:
            other = claim[1]()
            if other is callback:
                raise ValueError(
                    "the same CRLCallback is given twice in one learn() call (a CallbackList holding it twice?): each "
                    "of its hooks would run twice, counting every rollout and recording every step twice; list it once")
            if other is not None:
                raise ValueError(
                    "two CRLCallbacks run in one learn() call (e.g. in one CallbackList): each would count every "
                    "rollout and regroup the advantages again; pass a single CRLCallback")
    for manager in managers:
        manager.learn_claim = (session, weakref.ref(callback))


def check_rollin_order(callback: Any) -> None:
    """Raise where a RollInCallback of this ``learn`` call was initialised before ``callback`` (a
    CRLCallback that regroups advantages): SB3 runs a ``CallbackList`` in order, and this one's
    per-subgroup normalisation after the roll-in's zeros would give guide-acted steps a gradient again.

    Raises:
        ValueError: the order is ``[RollInCallback(), CRLCallback()]``.
    """
    rollin = unwrap_vec_wrapper(callback.training_env, GuidedRollInVecEnv)
    session = getattr(callback.model, "start_time", None)
    if rollin is not None and session is not None and getattr(rollin, "rollin_claim", None) == session:
        raise ValueError("CRLCallback comes after RollInCallback in this learn() call: its per-subgroup "
                         "advantage normalisation would undo the zeros RollInCallback writes on guide-acted steps; "
                         "pass CallbackList([CRLCallback(...), RollInCallback()]) (ComplementaryRL orders them)")


def on_policy(model: BaseAlgorithm | None, who: str = "this callback") -> OnPolicyAlgorithm:
    """``model`` as the on-policy algorithm (with a rollout buffer) that ``who`` needs; the one
    check of it in this package. Raises TypeError otherwise."""
    if not isinstance(model, OnPolicyAlgorithm) or not hasattr(model, "rollout_buffer"):
        raise TypeError(
            f"{who} needs an on-policy algorithm that fills a rollout buffer: PPO, A2C, or another "
            f"stable_baselines3 OnPolicyAlgorithm; got {type(model).__name__}, which "
            + ("learns from a replay buffer (off-policy) and is not supported"
               if hasattr(model, "replay_buffer") else "is not an OnPolicyAlgorithm"))
    return model


def check_on_policy_class(algorithm: type[BaseAlgorithm], *, experience: bool = True, self_imitation: bool = False,
                          rollin: bool = False) -> None:
    """The same rule as :func:`on_policy` for an algorithm class, before a run is built
    (``ComplementaryRL(algorithm=...)``) with any part that needs a rollout buffer: experience,
    self-imitation or the guided roll-in. Raises TypeError naming the parts to switch off.

    >>> from stable_baselines3 import SAC
    >>> check_on_policy_class(SAC, experience=False, self_imitation=True)
    Traceback (most recent call last):
    ...
    TypeError: ComplementaryRL(algorithm=SAC): self_imitation needs an on-policy algorithm that fills a rollout buffer (PPO, A2C, or another stable_baselines3 OnPolicyAlgorithm); pass self_imitation=False to train it without
    """
    parts = [name for name, on in (("experience", experience), ("self_imitation", self_imitation),
                                   ("rollin", rollin)) if on]
    if parts and not issubclass(algorithm, OnPolicyAlgorithm):
        off = {"experience": "experience=False", "self_imitation": "self_imitation=False", "rollin": "rollin=False"}
        raise TypeError(f"ComplementaryRL(algorithm={algorithm.__name__}): {' and '.join(parts)} "
                        f"need{'s' if len(parts) == 1 else ''} an on-policy algorithm that fills a rollout buffer "
                        "(PPO, A2C, or another stable_baselines3 OnPolicyAlgorithm); pass "
                        f"{', '.join(off[p] for p in parts)} to train it without")


def check_action_space(space: gym.Space, who: str) -> None:
    """Refuse discrete actions that do not start at 0: SB3's policies act in ``0..n-1`` whatever
    the space's ``start``, so the env would get actions outside its space (and the experience its
    records refuse). Raises ValueError naming the remedy.

    >>> check_action_space(gym.spaces.Discrete(3, start=1), "CRLCallback")
    Traceback (most recent call last):
    ...
    ValueError: CRLCallback: the env's actions are Discrete(3, start=1), but SB3's policies act in 0..n-1 whatever the start, so the env would get actions outside its space; shift them in a wrapper of the env (gymnasium.ActionWrapper: action + start) and give the agent Discrete(3)
    """
    start = getattr(space, "start", None)
    if isinstance(space, gym.spaces.Discrete | gym.spaces.MultiDiscrete) and start is not None and \
            bool((start != 0).any() if hasattr(start, "any") else start != 0):
        plain = f"Discrete({space.n})" if isinstance(space, gym.spaces.Discrete) else f"MultiDiscrete({space.nvec.tolist()})"
        raise ValueError(f"{who}: the env's actions are {space}, but SB3's policies act in 0..n-1 whatever the start, "
                         "so the env would get actions outside its space; shift them in a wrapper of the env "
                         f"(gymnasium.ActionWrapper: action + start) and give the agent {plain}")


def check_vec_env(env: Any, caller: str) -> None:
    """Raise a TypeError unless ``env`` is a stable_baselines3 ``VecEnv``; ``caller`` names the function.

    >>> import gymnasium as gym
    >>> check_vec_env(gym.make("CartPole-v1"), "load_crl")
    Traceback (most recent call last):
    ...
    TypeError: load_crl takes a stable_baselines3 VecEnv, got TimeLimit, a single env (CartPole-v1): wrap it as DummyVecEnv([lambda: env]) (stable_baselines3.common.vec_env), with the wrappers it was trained with
    """
    if isinstance(env, VecEnv):
        return
    if isinstance(env, gym.vector.VectorEnv):
        raise TypeError(f"{caller} takes a stable_baselines3 VecEnv, got {type(env).__name__}, a gymnasium VectorEnv "
                        "(SB3 does not step those): build SB3's own, make_vec_env(env_id, n_envs=...) "
                        "(stable_baselines3.common.env_util) or DummyVecEnv([make_env] * n)")
    spec = getattr(env, "spec", None)
    single = (f", a single env ({spec.id if spec is not None and getattr(spec, 'id', None) else type(env.unwrapped).__name__})"
              if hasattr(env, "unwrapped") and hasattr(env, "step") else "")
    raise TypeError(f"{caller} takes a stable_baselines3 VecEnv, got {type(env).__name__}{single}: wrap it as "
                    "DummyVecEnv([lambda: env]) (stable_baselines3.common.vec_env), with the wrappers it was trained with")
