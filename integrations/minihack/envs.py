"""MiniHack environment factories and the wrappers that make MiniHack safe for PPO.

Facts about MiniHack 1.0.2 on NLE 1.3.0 that these wrappers act on (checked by
``tests/test_minihack.py``):

* ``info["end_status"]`` is ``2`` (``TASK_SUCCESSFUL``) when the task is solved (the
  stairs are reached on navigation tasks), ``1`` (``DEATH``) when the hero dies and
  ``-1`` (``ABORTED``) when the env's own step limit (``max_episode_steps``, an argument
  of the env, not a gymnasium ``TimeLimit``) ends the episode.
* An episode ended by the step limit comes back as ``terminated=True,
  truncated=False``, so PPO would treat the last state as terminal and not bootstrap
  it. :class:`StepLimitTruncation` turns that ending into ``terminated=False,
  truncated=True``: running out of time is not a property of the state (the
  observation does not show the step count), so the value of the last state should be
  bootstrapped, the usual convention for time limits (Pardo et al., 2018).
* ``env.reset(seed=s)`` does not seed NetHack (only gymnasium's unused ``np_random``),
  ``env.reset(options={})`` raises ``KeyError: 'wizkit_items'``, and the arrays of the
  non-cropped keys (``blstats``, ``message``, ``chars``, ``inv_*``...) are buffers that
  NetHack overwrites on the next step or reset, so an observation kept by a wrapper
  (or SB3's ``terminal_observation``) silently changes. :class:`MiniHackCompat` fixes
  all three.
"""

from __future__ import annotations

import dataclasses
import functools
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.utils import RecordConstructorArgs
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecEnv

from experience_wrappers.validators import check_int
from integrations.minihack.checks import (
    check_env_id,
    check_env_kwargs,
    check_observation_keys,
    check_seed,
    discrete_action,
)

__all__ = [
    "END_STATUS_ABORTED",
    "END_STATUS_DEATH",
    "END_STATUS_RUNNING",
    "END_STATUS_SUCCESS",
    "LAST_ACTION_KEY",
    "DEFAULT_OBSERVATION_KEYS",
    "LastAction",
    "MiniHackCompat",
    "MiniHackSuccess",
    "StepLimitTruncation",
    "import_minihack",
    "make_minihack_env",
    "make_minihack_vec_env",
    "max_episode_steps",
]

#: ``info["end_status"]`` values (``nle.env.tasks.NetHackStaircase.StepStatus``).
END_STATUS_ABORTED = -1
END_STATUS_RUNNING = 0
END_STATUS_DEATH = 1
END_STATUS_SUCCESS = 2

#: Name of the observation key :class:`LastAction` adds.
LAST_ACTION_KEY = "last_action"

#: The observation keys :func:`make_minihack_env` asks for by default (the inventory too: a state
#: with the key in hand differs from one without, for the policy as for the key encoder).
DEFAULT_OBSERVATION_KEYS: tuple[str, ...] = ("glyphs_crop", "blstats", "inv_glyphs")

_INSTALL_HINT = "pip install complementary-rl[minihack]"


def import_minihack() -> Any:
    """Import MiniHack (which registers its env ids with gymnasium) and return the module.

    Raises:
        ImportError: MiniHack (or NLE) is missing; the message names the extra to install.
    """
    try:
        with warnings.catch_warnings():
            # minihack 1.0.2 imports pkg_resources, which warns on recent setuptools.
            warnings.filterwarnings("ignore", message=".*pkg_resources.*")
            import minihack
    except ImportError as exc:
        raise ImportError(
            f"the MiniHack integration needs MiniHack and NLE ({exc}); install them with "
            f"`{_INSTALL_HINT}`"
        ) from exc
    return minihack


def _end_status(info: Mapping[str, Any]) -> int:
    try:
        return int(info["end_status"])
    except KeyError:
        raise KeyError(
            "info has no 'end_status'; this wrapper needs an NLE/MiniHack env underneath"
        ) from None


def max_episode_steps(env: gym.Env) -> int:
    """The step limit the MiniHack env itself enforces (its ``max_episode_steps`` argument).

    MiniHack does not register a gymnasium ``TimeLimit``, so ``env.spec.max_episode_steps``
    is ``None``; the limit lives in the NLE env.

    Raises:
        ValueError: ``env`` is not an NLE/MiniHack env.
    """
    limit = getattr(env.unwrapped, "_max_episode_steps", None)
    if limit is None:
        raise ValueError(f"{env!r} is not an NLE/MiniHack env (no _max_episode_steps)")
    return int(limit)


def _copy_obs(obs: Any) -> Any:
    if isinstance(obs, dict):
        return {k: np.array(v, copy=True) for k, v in obs.items()}
    return np.array(obs, copy=True)


class MiniHackCompat(gym.Wrapper, RecordConstructorArgs):
    """Seeding, reset-option and buffer-reuse fixes for NLE 1.3.0 / MiniHack 1.0.2 envs.

    * ``reset(seed=s)`` seeds NetHack's core and display RNGs (with NetHack's anti-TAS
      reseeding off), and every later ``reset()`` without a seed draws fresh NetHack
      seeds from a generator seeded by ``s``, so a seed fixes the whole sequence of
      episodes. Until a seed is given (here or in the constructor) NetHack seeds itself
      from system randomness, as NLE does.
    * ``reset(options=...)`` without a ``"wizkit_items"`` entry no longer raises.
    * Observations are copied, so they stay valid after the next step.

    Args:
        env: an NLE or MiniHack env.
        seed: seed used for the first reset that is not given one.
    """

    def __init__(self, env: gym.Env, seed: int | None = None) -> None:
        RecordConstructorArgs.__init__(self, seed=seed)
        gym.Wrapper.__init__(self, env)
        if not callable(getattr(env.unwrapped, "seed", None)) or not hasattr(
            env.unwrapped, "nethack"
        ):
            raise ValueError(f"MiniHackCompat needs an NLE/MiniHack env, got {env.unwrapped!r}")
        seed = check_seed(seed)
        self._rng: np.random.Generator | None = (
            None if seed is None else np.random.default_rng(seed)
        )

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        seed = check_seed(seed)
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        if self._rng is not None:
            core, disp = (int(s) for s in self._rng.integers(0, 2**63 - 1, size=2))
            nle_env: Any = self.env.unwrapped  # NLE's env (untyped): seed(core, disp, reseed)
            nle_env.seed(core=core, disp=disp, reseed=False)
        if options is not None and "wizkit_items" not in options:
            options = {**options, "wizkit_items": None}
        obs, info = self.env.reset(seed=seed, options=options)
        return _copy_obs(obs), info

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        return _copy_obs(obs), reward, terminated, truncated, info


class StepLimitTruncation(gym.Wrapper, RecordConstructorArgs):
    """Report MiniHack's step-limit ending as ``truncated=True, terminated=False``.

    MiniHack ends an episode at its ``max_episode_steps`` with ``end_status == -1``
    (``ABORTED``) and ``terminated=True``. A time limit the agent cannot observe is not
    a terminal state, so this wrapper reports it as a truncation and PPO bootstraps the
    value of the last state. Deaths and successes are left as they are.
    """

    def __init__(self, env: gym.Env) -> None:
        RecordConstructorArgs.__init__(self)
        gym.Wrapper.__init__(self, env)

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        if terminated and _end_status(info) == END_STATUS_ABORTED:
            terminated, truncated = False, True
        return obs, reward, terminated, truncated, info


class MiniHackSuccess(gym.Wrapper, RecordConstructorArgs):
    """Put ``info["success"]`` and ``info["is_success"]`` on the last step of each episode.

    Both are ``True`` iff ``info["end_status"] == 2`` (``TASK_SUCCESSFUL``): the task was
    solved, not the hero died (``1``) or the step limit ran out (``-1``).
    ``"is_success"`` is the key SB3's logger and ``EvalCallback`` read; ``"success"`` is
    the one this library reads. Steps before the last carry neither key.
    """

    def __init__(self, env: gym.Env) -> None:
        RecordConstructorArgs.__init__(self)
        gym.Wrapper.__init__(self, env)

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        if terminated or truncated:
            success = _end_status(info) == END_STATUS_SUCCESS
            info = dict(info)
            info["success"] = success
            info["is_success"] = success
        return obs, reward, terminated, truncated, info


class LastAction(gym.Wrapper, RecordConstructorArgs):
    """Add the previous action to a Dict observation under ``key``.

    The new entry is ``Discrete(n + 1)`` for an env with ``Discrete(n)`` actions: the
    action just taken (0..n-1), or ``n`` ("none") right after reset. It lets the policy
    and the key encoder tell a state reached by a no-op (walking into a wall) from the
    same state seen for the first time.

    Args:
        env: an env with a ``Dict`` observation space and ``Discrete`` actions.
        key: name of the new observation entry.
    """

    def __init__(self, env: gym.Env, key: str = LAST_ACTION_KEY) -> None:
        RecordConstructorArgs.__init__(self, key=key)
        gym.Wrapper.__init__(self, env)
        if not isinstance(env.observation_space, spaces.Dict):
            raise ValueError(
                f"LastAction needs a Dict observation space, got {env.observation_space!r}"
            )
        if not isinstance(env.action_space, spaces.Discrete):
            raise ValueError(f"LastAction needs Discrete actions, got {env.action_space!r}")
        if key in env.observation_space.spaces:
            raise ValueError(f"the observation already has a key {key!r}")
        self.key = key
        self._start = int(env.action_space.start)
        self.none_action = int(env.action_space.n)
        self.observation_space = spaces.Dict(
            {**env.observation_space.spaces, key: spaces.Discrete(self.none_action + 1)}
        )

    def _with(self, obs: dict[str, Any], value: int) -> dict[str, Any]:
        out = dict(obs)
        out[self.key] = np.int64(value)
        return out

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(seed=seed, options=options)
        return self._with(obs, self.none_action), info

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        value = discrete_action(action, self.env.action_space, "the MiniHack env")  # (NLE reads -1 as its last)
        obs, reward, terminated, truncated, info = self.env.step(action)
        last = value - self._start
        return self._with(obs, last), reward, terminated, truncated, info


def make_minihack_env(
    env_id: str,
    observation_keys: Sequence[str] = DEFAULT_OBSERVATION_KEYS,
    seed: int | None = None,
    add_last_action: bool = True,
    fix_time_limit: bool = True,
    **kwargs: Any,
) -> gym.Env:
    """Make a MiniHack (or NLE) env ready for PPO.

    The stack, inside out: the env from ``gym.make`` (its own step limit,
    ``max_episode_steps``, stays as the env defines it unless passed in ``kwargs``),
    :class:`MiniHackCompat` (NetHack seeding, copied observations),
    :class:`StepLimitTruncation` (if ``fix_time_limit``), :class:`MiniHackSuccess` and
    :class:`LastAction` (if ``add_last_action``). All wrappers record their arguments,
    so ``gym.make(env.spec)`` rebuilds the same stack.

    Args:
        env_id: any registered MiniHack id, e.g. ``"MiniHack-Room-Monster-5x5-v0"``.
        observation_keys: NLE/MiniHack observation keys to return.
        seed: seed of the first reset that is not given one (also seeds the action space).
        add_last_action: add the ``"last_action"`` observation key (see :class:`LastAction`).
        fix_time_limit: report the step-limit ending as a truncation (see
            :class:`StepLimitTruncation`); ``False`` keeps MiniHack's ``terminated=True``.
        **kwargs: passed to the env's constructor (``max_episode_steps``,
            ``reward_win``, ``penalty_step``, ``obs_crop_h``...).

    Returns:
        The wrapped env; its observation space is a ``gymnasium.spaces.Dict``.

    Raises:
        ImportError: MiniHack is not installed.
        ValueError: an unknown env id or one that is neither MiniHack's nor NLE's, bad observation keys
            (a cropped view asked of an NLE env) or a bad seed.

    >>> env = make_minihack_env("MiniHack-Room-5x5-v0", seed=0)
    >>> sorted(env.observation_space.spaces)
    ['blstats', 'glyphs_crop', 'inv_glyphs', 'last_action']
    >>> obs, info = env.reset()
    >>> int(obs["last_action"]), max_episode_steps(env)
    (8, 100)
    >>> env.close()
    """
    import_minihack()
    check_env_id(env_id)
    keys = check_observation_keys(observation_keys, LAST_ACTION_KEY if add_last_action else None)
    seed = check_seed(seed)
    check_env_kwargs(kwargs)

    spec = gym.spec(env_id)
    cropped = [k for k in keys if k.endswith("_crop")]
    if cropped and str(spec.entry_point).startswith("nle."):
        raise ValueError(f"{env_id!r} is one of NLE's own envs, which have no cropped views {cropped} (MiniHack adds "
                         "them): pass observation_keys without them, e.g. ('glyphs', 'blstats')")
    # Pass everything through the spec's kwargs so that ``max_episode_steps`` reaches the
    # env constructor instead of gym.make's own TimeLimit argument.
    spec = dataclasses.replace(
        spec, kwargs={**spec.kwargs, **kwargs, "observation_keys": keys}
    )
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*pkg_resources.*")
        env = gym.make(spec)
    env = MiniHackCompat(env, seed=seed)
    if fix_time_limit:
        env = StepLimitTruncation(env)
    env = MiniHackSuccess(env)
    if add_last_action:
        env = LastAction(env)
    if seed is not None:
        env.action_space.seed(seed)
    return env


def make_minihack_vec_env(
    env_id: str,
    n_envs: int = 8,
    seed: int | None = 0,
    vec_env_cls: type[DummyVecEnv] | type[SubprocVecEnv] = DummyVecEnv,
    wrapper_class: Callable[..., gym.Env] | None = None,
    wrapper_kwargs: dict[str, Any] | None = None,
    vec_env_kwargs: dict[str, Any] | None = None,
    monitor_kwargs: dict[str, Any] | None = None,
    **env_kwargs: Any,
) -> VecEnv:
    """A Stable-Baselines3 VecEnv of ``n_envs`` MiniHack envs, each under ``Monitor``.

    Each env is ``wrapper_class(Monitor(make_minihack_env(env_id, **env_kwargs)),
    **wrapper_kwargs)``: the Monitor sees the task's own episodes (return, length and
    ``"success"`` in ``info["episode"]``), and a wrapper such as
    ``experience_wrappers.ExperienceWrapper`` goes on top of it. Env ``i`` is seeded with
    ``seed + i`` at the first reset.

    Args:
        env_id: a MiniHack env id.
        n_envs: number of envs.
        seed: base seed (``None``: unseeded).
        vec_env_cls: ``DummyVecEnv`` or ``SubprocVecEnv``.
        wrapper_class: optional wrapper applied to each env above the Monitor.
        wrapper_kwargs: keyword arguments of ``wrapper_class``.
        vec_env_kwargs: keyword arguments of ``vec_env_cls`` (e.g. ``start_method``).
        monitor_kwargs: keyword arguments of ``Monitor`` (default
            ``info_keywords=("success",)``).
        **env_kwargs: passed to :func:`make_minihack_env`.

    >>> venv = make_minihack_vec_env("MiniHack-Room-5x5-v0", n_envs=2, seed=0)
    >>> venv.num_envs, venv.reset()["glyphs_crop"].shape
    (2, (2, 9, 9))
    >>> venv.close()
    """
    import_minihack()
    check_int("n_envs", n_envs, minimum=1, numpy=True)
    seed = check_seed(seed)
    if wrapper_kwargs is not None and wrapper_class is None:
        raise ValueError("wrapper_kwargs given without a wrapper_class")
    if "seed" in env_kwargs:
        raise ValueError("give the seed as make_minihack_vec_env(seed=...), not in env_kwargs")
    # Fail early (here, not inside a subprocess) on a bad id or bad keys.
    make_minihack_env(env_id, **env_kwargs).close()
    return make_vec_env(
        functools.partial(make_minihack_env, env_id, **env_kwargs),
        n_envs=int(n_envs),
        seed=seed,
        vec_env_cls=vec_env_cls,
        vec_env_kwargs=vec_env_kwargs,
        monitor_kwargs={"info_keywords": ("success",)} if monitor_kwargs is None else monitor_kwargs,
        wrapper_class=wrapper_class,
        wrapper_kwargs=wrapper_kwargs,
    )
