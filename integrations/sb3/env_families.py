"""Environment families: how to build the envs, key encoders and policy networks of each kind of env id."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import attrs
import gymnasium as gym
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv

from experience_wrappers import ExperienceBank, ExperienceWrapper, KeyEncoder
from experience_wrappers.wrappers import paired_env_fns
from experience_wrappers.wrappers.spaces import EXPERIENCE_KEYS, base_parts

__all__ = ["Family", "family_of", "build_env", "checked_factory", "made_env"]


@attrs.frozen
class Family:
    """What a run needs to know about one kind of environment.

    Attributes:
        name: ``"classic"``, ``"minihack"`` or ``"metaworld"``.
        make_vec: ``make_vec(env_id, n_envs, seed, wrapper_class, wrapper_kwargs) -> VecEnv``.
        make_env: ``make_env(env_id) -> Env``, one env (under a ``Monitor``) whose
            ``reset(seed=s)`` gives the same instance for the same ``s``: what groups that
            replay instances (paired credit) are built from (None: the family cannot).
        base_policy_kwargs: policy kwargs of vanilla PPO (the base encoder).
        base_extractor: ``(class, kwargs)`` of the base encoder inside the CRL extractor
            (None: SB3's CombinedExtractor).
        key_encoder: ``fn(observation_space) -> KeyEncoder`` (None: the default projection).
        task_id: the wrapper's ``task_id`` argument.
        demonstrator: ``fn(env_id, n_episodes, seed) -> list[Demonstration]`` of successful
            scripted episodes in the training env's observation keys (None: no script).
    """

    name: str
    make_vec: Callable[..., VecEnv]
    base_policy_kwargs: dict[str, Any] = attrs.field(factory=dict)
    base_extractor: tuple[type, dict[str, Any]] | None = None
    key_encoder: Callable[[gym.Space], KeyEncoder] | None = None
    task_id: Any = 0
    demonstrator: Callable[[str, int, int], list[Any]] | None = None
    make_env: Callable[[Any], gym.Env] | None = None  # takes the env ids (or factories) the family knows


def made_env(factory: Callable[[], Any]) -> gym.Env:
    """``factory()``, checked to be one gymnasium env (SB3 would say "not a Gymnasium environment ... OpenAI Gym").

    Raises:
        TypeError: it returned something else (None, a ``gymnasium.vector`` env, a VecEnv), named.
    """
    env = factory()
    if not isinstance(env, gym.Env):
        raise TypeError(f"the env factory {getattr(factory, '__name__', factory)!r} returned "
                        f"{type(env).__module__}.{type(env).__name__}, not a gymnasium.Env: it must return one env "
                        "per call (e.g. lambda: gym.make('CartPole-v1'); the library builds the vector env)")
    return env


def checked_factory(env_id: str | Callable[[], Any]) -> str | Callable[[], gym.Env]:
    """An env id as it is; a factory as one whose envs are checked (:func:`made_env`) when made."""
    return env_id if isinstance(env_id, str) else functools.partial(made_env, env_id)


def _classic_vec(env_id: str | Callable[[], gym.Env], n_envs: int, seed: int, wrapper_class: Any = None,
                 wrapper_kwargs: dict | None = None) -> VecEnv:
    return make_vec_env(checked_factory(env_id), n_envs=n_envs, seed=seed, vec_env_cls=DummyVecEnv,
                        wrapper_class=wrapper_class, wrapper_kwargs=wrapper_kwargs)


def _classic_env(env_id: str | Callable[[], gym.Env]) -> gym.Env:
    return Monitor(gym.make(env_id) if isinstance(env_id, str) else made_env(env_id))


def _minihack_family() -> Family:
    from integrations.minihack import (
        GlyphCNNExtractor,
        MiniHackKeyEncoder,
        make_minihack_env,
        make_minihack_vec_env,
        scripted_demonstrations,
    )

    def make_vec(env_id: str, n_envs: int, seed: int, wrapper_class: Any = None,
                 wrapper_kwargs: dict | None = None) -> VecEnv:
        return make_minihack_vec_env(env_id, n_envs=n_envs, seed=seed, wrapper_class=wrapper_class,
                                     wrapper_kwargs=wrapper_kwargs)

    return Family("minihack", make_vec,
                  base_policy_kwargs={"features_extractor_class": GlyphCNNExtractor},
                  base_extractor=(GlyphCNNExtractor, {}),
                  key_encoder=lambda space: MiniHackKeyEncoder(space),
                  demonstrator=scripted_demonstrations,
                  make_env=lambda env_id: Monitor(make_minihack_env(env_id), info_keywords=("success",)))


#: the Meta-World id this library builds (its own MT10 factory); others are refused by name
METAWORLD_ID = "Meta-World/MT10"


def _metaworld_family() -> Family:
    from integrations.metaworld import make_mt10_vec_env, task_id_from_obs

    def make_vec(env_id: str, n_envs: int, seed: int, wrapper_class: Any = None,
                 wrapper_kwargs: dict | None = None) -> VecEnv:
        if n_envs != 1 and n_envs % 10:  # (1: a probe of the spaces, one env of each task)
            raise ValueError(f"{METAWORLD_ID} runs each of its 10 tasks in n_envs // 10 envs: give n_envs a multiple "
                             f"of 10, got {n_envs}")
        return make_mt10_vec_env(n_envs_per_task=max(1, n_envs // 10), seed=seed,
                                 wrapper_class=wrapper_class, wrapper_kwargs=wrapper_kwargs)

    return Family("metaworld", make_vec, task_id=task_id_from_obs)


def family_of(env_id: str | Callable[[], gym.Env]) -> Family:
    """The family of an env id (MiniHack ids, ``Meta-World/MT10``, else any gymnasium id) or of
    an env factory (``() -> gym.Env``: the classic family, SB3's default networks).

    Raises:
        ValueError: a ``Meta-World/`` id other than ``Meta-World/MT10`` (one task: a factory, e.g.
            ``lambda: make_mt1_env("reach-v3")``).
    """
    if isinstance(env_id, str) and env_id.startswith("MiniHack-"):
        return _minihack_family()
    if isinstance(env_id, str) and env_id.startswith("Meta-World/"):
        if env_id != METAWORLD_ID:
            raise ValueError(f"{env_id!r}: the Meta-World id this library builds is {METAWORLD_ID!r}; for one task pass "
                             "a factory, e.g. lambda: integrations.metaworld.make_mt1_env('reach-v3')")
        return _metaworld_family()
    return Family("classic", _classic_vec, make_env=_classic_env)


def _seeded(manager_kwargs: dict[str, Any] | None, seed: int) -> dict[str, Any]:
    """``manager_kwargs`` with the run's ``seed`` as the extractor's, unless they set one
    (``extractor={"seed": ...}``, or the deprecated ``seed=...``, which wins as it always did).

    >>> _seeded({"mode": "sync", "extractor": {"clip": 0.2}}, 3)
    {'mode': 'sync', 'extractor': {'seed': 3, 'clip': 0.2}}
    """
    kwargs = dict(manager_kwargs or {})
    if "seed" in kwargs:
        return kwargs
    return {**kwargs, "extractor": {"seed": seed, **kwargs.get("extractor", {})}}


class _ReadableSpace(gym.Wrapper):
    """The env unchanged, its observation space checked as the experience wrapper checks it
    (:func:`~experience_wrappers.wrappers.spaces.base_parts`): a Text, Graph or nested Dict space is
    refused by name before SB3's ``DummyVecEnv`` fails on it."""

    def __init__(self, env: gym.Env) -> None:
        base_parts(env.observation_space, EXPERIENCE_KEYS, "ExperienceWrapper")
        super().__init__(env)


def build_env(env_id: str | Callable[[], gym.Env], n_envs: int, seed: int, bank: ExperienceBank | None,
              wrapper_kwargs: dict[str, Any] | None = None, manager_kwargs: dict[str, Any] | None = None,
              family: Family | None = None, vec_wrapper: bool = False, group_size: int | None = None) -> VecEnv:
    """A VecEnv for one run; with a bank, each env is wrapped in an :class:`ExperienceWrapper`
    (or, with ``vec_wrapper``, the whole VecEnv in one :class:`ExperienceVecEnv`).

    ``group_size``: the envs form groups of this size that replay one task instance per
    episode index (:func:`~experience_wrappers.wrappers.paired_env_fns`, seeded by ``seed``),
    for paired credit (``wrapper_kwargs`` then says ``paired=True``). None: envs as usual.
    """
    fam = family or family_of(env_id)
    if group_size is not None and fam.make_env is None:
        raise ValueError(f"group_size={group_size} needs envs that replay an instance for a reset seed; the "
                         f"{fam.name!r} family of {env_id!r} cannot build them")

    def make_vec(n: int, wrapper_class: Any = None, kwargs: dict[str, Any] | None = None) -> VecEnv:
        if group_size is None:
            return fam.make_vec(env_id, n, seed, wrapper_class, kwargs)
        make_env = fam.make_env
        assert make_env is not None
        wrap = None if wrapper_class is None else (lambda e: wrapper_class(e, **(kwargs or {})))
        return DummyVecEnv(paired_env_fns(lambda: make_env(env_id), n, group_size, seed, wrapper=wrap))

    if bank is None:
        return make_vec(n_envs)
    probe = fam.make_vec(env_id, 1, seed, _ReadableSpace)  # (a space SB3 cannot buffer: refused by name first)
    key_encoder = fam.key_encoder(probe.observation_space) if fam.key_encoder else None
    probe.close()
    kwargs = {"bank": bank, "key_encoder": key_encoder, "task_id": fam.task_id, "seed": seed,
              "manager_kwargs": _seeded(manager_kwargs, seed), **(wrapper_kwargs or {})}
    if vec_wrapper:
        from integrations.sb3 import ExperienceVecEnv

        bank = kwargs.pop("bank")
        return ExperienceVecEnv(make_vec(n_envs), bank, **kwargs)
    return make_vec(n_envs, ExperienceWrapper, kwargs)
