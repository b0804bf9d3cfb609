"""Checks at the wrappers' boundary: what the wrapped env returns (finite observations inside
their space, rewards that are real finite numbers), and where a wrapper is built.

Observations become keys, and keys decide what is retrieved and where new entries go, so
an observation the space does not allow would be filed under a wrong key without a word:
a Discrete ``-1`` one-hot encodes as the last value. Such values are refused here with the
offending value and the space in the message. Box values outside the bounds are warned
about once per wrapper and key instead (as gymnasium's env checker does): many envs
overshoot their declared bounds slightly. Rewards must be finite: a NaN reward would make
the free-episode baseline, and every delta after it, NaN; a string reward must not become a
number, and a reward of shape ``(2,)`` or ``1e300`` must be refused at the step that returned
it, not at the episode's end inside the extractor.

The wrappers check every reward and every observation's NaN and inf at every step; an
observation against its space at every step of an injector's first
:data:`~experience_wrappers.wrappers.injector.FULL_CHECKS`, then at random steps (one in
:data:`~experience_wrappers.wrappers.injector.CHECK_EVERY` on average) and at every reset and
retrieval (task scope; run scope's wrapper checks every observation).

A per-env wrapper with a bank of its own process must not be built inside a vector env's
worker process (:func:`check_not_in_vector_worker`): the bank there is a copy, and the
episodes would never reach the main process's bank.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable
from numbers import Real
from types import FrameType
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from ..validators import MAX_ABS_REWARD
from ..whole_numbers import inside, whole

__all__ = ["check_finite_observation", "check_rewards", "reward_row", "env_name", "MAX_ABS_REWARD", "warn_drifting_keys",
           "observation_checker", "first_row_outside", "inside", "check_not_in_vector_worker", "vector_worker"]


def check_finite_observation(obs: Any, where: str) -> None:
    """Raise a clear ValueError when a float observation holds NaN or inf: a small one shown whole, a larger
    one by its first such value's index (a batch's first axis is its rows), a dict's by its key.

    >>> check_finite_observation(np.array([0.0, np.nan]), "reset")
    Traceback (most recent call last):
    ...
    ValueError: the env returned an observation with NaN or inf at reset: [ 0. nan]
    >>> check_finite_observation({"image": np.zeros((3, 4)), "pos": np.array([[1.0, np.inf]] * 5)}, "step")
    Traceback (most recent call last):
    ...
    ValueError: the env returned an observation with NaN or inf at step: key 'pos': inf at index (0, 1) of its shape (5, 2) (5 of its values)
    """
    parts = obs.items() if isinstance(obs, dict) else enumerate(obs) if isinstance(obs, tuple) else ((None, obs),)
    for key, part in parts:
        arr = np.asarray(part)
        if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
            raise ValueError(f"the env returned an observation with NaN or inf at {where}: {_bad_values(arr, key)}")


def _bad_values(arr: np.ndarray, key: Any) -> str:
    """Where ``arr`` (some of it NaN or inf) is so: itself where small, else its first such index and their count."""
    named = "" if key is None else f"key {key!r}: "
    if arr.size <= 8:
        return f"{named}{arr}"
    bad = ~np.isfinite(arr)
    index = tuple(int(i) for i in np.argwhere(bad)[0])
    return f"{named}{arr[index]} at index {index} of its shape {arr.shape} ({int(bad.sum())} of its values)"




def check_rewards(rewards: Any, steps: Any, source: str = "the env") -> np.ndarray:
    """The rewards of one step, one per env, as float64; refused where they arrive.

    ``rewards`` as the env returned them (not converted yet: ``"1"`` must not become 1.0).
    Each must be one real number (bool, int or float, Python or numpy), finite and at most
    :data:`MAX_ABS_REWARD` in magnitude. The message names ``source`` (whose step returned
    it), the env's row and its step in the episode.

    Raises:
        TypeError: a reward is not a number (a str, None, an object).
        ValueError: the rewards are not one number per env (a reward of shape ``(2,)``), or
            one is NaN, infinite or larger than :data:`MAX_ABS_REWARD`.

    >>> check_rewards(np.array([0.0, np.nan]), np.array([3, 7]))
    Traceback (most recent call last):
    ...
    ValueError: the env returned reward nan (env 1, step 7 of its episode): rewards must be finite
    >>> check_rewards(np.array(["1"]), np.array([0]), "MyEnv's step()")
    Traceback (most recent call last):
    ...
    TypeError: MyEnv's step() returned reward '1' (a str) (env 0, step 0 of its episode): rewards must be real numbers (bool, int or float)
    """
    r = np.asarray(rewards)
    n = steps.shape[0] if isinstance(steps, np.ndarray) and steps.ndim == 1 else len(np.atleast_1d(np.asarray(steps)))
    if r.dtype.kind in "biuf" and r.shape == (n,) and n:  # the usual case: one reduction (NaN fails the <=)
        r = r.astype(np.float64, copy=False)
        if (-MAX_ABS_REWARD <= r[0] <= MAX_ABS_REWARD) if n == 1 else float(np.abs(r).max()) <= MAX_ABS_REWARD:
            return r
    verb = f"{source} returned" if source != "the env" else "the env returned"

    def where(i: int) -> str:
        step = int(np.asarray(steps).reshape(-1)[i]) if np.size(steps) > i else 0
        return f"(env {i}, step {step} of its episode)"

    if r.dtype.kind not in "biuf":
        flat = r.reshape(-1) if r.ndim else r.reshape(1)
        i = 0
        if r.dtype.kind == "O":  # the first element that is not a number
            i = next((j for j, x in enumerate(flat.tolist()) if isinstance(x, bool) or not isinstance(x, Real)), 0)
        value = _plain(flat[i]) if flat.size else rewards
        raise TypeError(f"{verb} reward {value!r} (a {type(value).__name__}) {where(min(i, n - 1))}: rewards must be "
                        "real numbers (bool, int or float)")
    if r.shape != (n,):
        raise ValueError(f"{verb} rewards of shape {r.shape[1:] if r.ndim else ()} {where(0)}: a reward must be one "
                         f"number per env, got {r.tolist()}")
    r = r.astype(np.float64, copy=False)
    bad = ~np.isfinite(r)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{verb} reward {float(r[i])!r} {where(i)}: rewards must be finite")
    big = np.abs(r) > MAX_ABS_REWARD
    if big.any():
        i = int(np.flatnonzero(big)[0])
        raise ValueError(f"{verb} reward {float(r[i])!r} {where(i)}: rewards must be at most {MAX_ABS_REWARD:g} in "
                         "magnitude (the extractor computes in float32); scale the env's rewards down")
    return r


def _plain(x: Any) -> Any:
    """A numpy scalar as the Python value it holds (for messages)."""
    return x.item() if isinstance(x, np.generic) else x


def reward_row(reward: Any) -> np.ndarray:
    """One env's reward as a batch of one, not converted (for :func:`check_rewards`): a scalar
    or a one-element array becomes shape ``(1,)``, anything larger ``(1, ...)``.

    >>> reward_row(1.5), reward_row(np.array([2.0])).shape, reward_row(np.zeros(2)).shape, reward_row("1").dtype.kind
    (array([1.5]), (1,), (1, 2), 'U')
    """
    r = np.asarray(reward)
    return r.reshape(1) if r.size == 1 else r[None]


def env_name(env: Any) -> str:
    """A short name of an env for messages: its registered id, else its (unwrapped) class name.

    >>> import gymnasium as gym
    >>> from gymnasium.envs.classic_control import CartPoleEnv
    >>> env_name(gym.make("CartPole-v1")), env_name(CartPoleEnv())
    ('CartPole-v1', 'CartPoleEnv')
    """
    spec = getattr(env, "spec", None)
    if spec is not None and getattr(spec, "id", None):
        return str(spec.id)
    return type(getattr(env, "unwrapped", env)).__name__


#: the functions that build and run an env in a vector env's worker process, by (module, name)
_VECTOR_WORKERS: dict[tuple[object, str], str] = {
    ("stable_baselines3.common.vec_env.subproc_vec_env", "_worker"): "a SubprocVecEnv",
    ("gymnasium.vector.async_vector_env", "_async_worker"): "an AsyncVectorEnv",
}


def warn_drifting_keys(env: Any, what: str) -> None:
    """Warn where gymnasium's ``NormalizeObservation`` (still updating its statistics) sits below the experience
    wrapper: the observations it records, and so their keys, drift as the statistics move, and entries written
    early are keyed otherwise than the same states later."""
    while isinstance(env, gym.Wrapper):
        if isinstance(env, gym.wrappers.NormalizeObservation) and env.update_running_mean:
            warnings.warn(f"{what}: a NormalizeObservation below it keeps updating its statistics, so the observations "
                          "the experience records, and their keys, drift during training (a state is keyed "
                          "otherwise later than when its entry was written); normalise on top instead, where the "
                          "policy reads it and the experience does not: SB3's VecNormalize(venv, "
                          "norm_obs_keys=norm_obs_keys(venv)) over the VecEnv of experience-wrapped envs",
                          UserWarning, stacklevel=3)
            return
        env = env.env


def vector_worker() -> str | None:
    """Which vector env's worker process calls this (``"a SubprocVecEnv"``), or None (read off the stack)."""
    here = inspect.currentframe()
    frame: FrameType | None = here.f_back if here is not None else None
    while frame is not None:
        found = _VECTOR_WORKERS.get((frame.f_globals.get("__name__"), frame.f_code.co_name))
        if found is not None:
            return found
        frame = frame.f_back
    return None


def check_not_in_vector_worker(what: str = "ExperienceWrapper") -> None:
    """Raise when a wrapper with a bank of this process is built inside a vector env's worker.

    With ``start_method="fork"`` every worker holds a copy of the bank (with ``"spawn"`` and
    ``"forkserver"``, SB3's default, pickling the bank is refused already): the episodes of its
    env would go into the copy and never reach the main process's bank, without a word.

    Raises:
        RuntimeError: built inside a ``SubprocVecEnv`` (or gymnasium ``AsyncVectorEnv``) worker.
            The parent process then sees the worker end (``EOFError``); this message is in the
            worker's traceback on stderr.
    """
    worker = vector_worker()
    if worker is not None:
        raise RuntimeError(
            f"{what} built inside {worker} worker process: its bank there is a copy "
            " (start_method='fork' copies it into every worker), so this env's episodes would never reach "
            "the main process's bank. Wrap the vector env instead: ExperienceVecEnv(SubprocVecEnv([...plain env "
            "factories...]), bank) from integrations.sb3 keeps the bank in the main process; integrations.ray "
            "shares one bank between processes")


Check = Callable[[Any, str], None]

#: the spaces whose membership :func:`inside` decides element by element, over a whole batch at once
LEAF_SPACES = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)


def first_row_outside(batch: Any, space: spaces.Space, n: int) -> int | None:
    """The first of the ``n`` rows of ``batch`` (a leading axis; a dict of such arrays for a Dict
    space) that ``space`` does not allow, Box bounds included; None if all are in it. One
    comparison over all rows for the spaces of :func:`inside`, row by row (``contains()``) for
    others. A wrong shape or a non-numeric dtype makes row 0 the answer.

    >>> first_row_outside(np.array([[0.0], [np.nan], [9.0]]), spaces.Box(-1, 1, (1,)), 3)
    1
    >>> first_row_outside({"a": np.array([0, 1, 2])}, spaces.Dict({"a": spaces.Discrete(2)}), 3)
    2
    """
    if isinstance(space, spaces.Dict) and isinstance(batch, dict):
        found = [first_row_outside(batch[k], s, n) for k, s in space.spaces.items()]
        return min((f for f in found if f is not None), default=None)
    if isinstance(space, LEAF_SPACES):
        x = np.asarray(batch)
        shape = (n, *(space.shape or ()))
        if x.shape != shape:
            return 0 if x.shape[1:] != shape[1:] else None
        if x.dtype.kind not in "biuf":  # (objects, strings)
            return 0
        ok = inside(space, x).reshape(n, -1).all(axis=1)
        return None if ok.all() else int(np.argmin(ok))
    for t in range(n):
        row = {k: v[t] for k, v in batch.items()} if isinstance(batch, dict) else batch[t]
        if not space.contains(_as_space_value(row, space)):
            return t
    return None


def _as_space_value(obs: Any, space: spaces.Space) -> Any:
    """One row as the types ``space.contains()`` takes (a Box's dtype, a Discrete's int)."""
    if isinstance(space, spaces.Dict) and isinstance(obs, dict):
        return {k: _as_space_value(obs[k], s) for k, s in space.spaces.items() if k in obs}
    if isinstance(space, spaces.Box):
        return np.asarray(obs, dtype=space.dtype)
    if isinstance(space, spaces.Discrete):
        return np.int64(np.asarray(obs).item())
    return np.asarray(obs)


def observation_checker(space: spaces.Space) -> Check:
    """A function ``check(batch, where)`` for batches (leading axis) of observations of ``space``.

    Built once per wrapper (bounds are prepared here, so a step costs a few numpy
    reductions). It raises ValueError for a wrong shape, a Discrete / MultiDiscrete value out
    of range, a MultiBinary value other than 0 and 1, or a missing Dict key; it warns once
    (``UserWarning``) per key about Box values outside the bounds.

    >>> check = observation_checker(spaces.Discrete(3))
    >>> check(np.array([0, 2]), "step")
    >>> check(np.array([-1]), "reset")
    Traceback (most recent call last):
    ...
    ValueError: the env returned an observation outside its space at reset: value -1 is not in Discrete(3) (0 to 2); its key would be wrong
    """
    warned: set[str] = set()
    return _checker(space, "", warned)


def _label(path: str) -> str:
    return f" under key {path!r}" if path else ""


def _fail(where: str, path: str, why: str) -> ValueError:
    return ValueError(f"the env returned an observation outside its space at {where}{_label(path)}: {why}")


def _checker(space: spaces.Space, path: str, warned: set[str]) -> Check:
    if isinstance(space, spaces.Dict):
        subs = {key: _checker(sub, f"{path}/{key}" if path else str(key), warned)
                for key, sub in space.spaces.items()}

        def check_dict(batch: Any, where: str) -> None:
            if not isinstance(batch, dict):
                raise _fail(where, path, f"expected a dict with keys {sorted(subs)}, got {type(batch).__name__}")
            for key, sub in subs.items():
                if key not in batch:
                    raise _fail(where, path, f"the key {key!r} is missing")
                sub(batch[key], where)
        return check_dict
    if isinstance(space, spaces.Tuple):
        parts = [_checker(sub, f"{path}/{i}", warned) for i, sub in enumerate(space.spaces)]

        def check_tuple(batch: Any, where: str) -> None:
            for i, sub in enumerate(parts):
                sub(batch[i], where)
        return check_tuple
    if isinstance(space, spaces.Box):
        return _box_checker(space, path, warned)
    if isinstance(space, spaces.Discrete):
        lo, hi = int(space.start), int(space.start) + int(space.n) - 1

        def check_discrete(batch: Any, where: str) -> None:
            x = np.asarray(batch)
            if x.size and (x.min() < lo or x.max() > hi or (x.dtype.kind == "f" and not np.all(whole(x)))):
                bad = x.reshape(-1)[np.argmin(inside(space, x.reshape(-1)))]
                raise _fail(where, path, f"value {bad.item()!r} is not in {space} ({lo} to {hi}); its key would be wrong")
        return check_discrete
    if isinstance(space, spaces.MultiDiscrete):
        def check_multi(batch: Any, where: str) -> None:
            x = np.asarray(batch)
            if x.shape[1:] != space.shape:
                raise _fail(where, path, f"shape {x.shape[1:]} is not the space's {space.shape}")
            if x.size and not inside(space, x).all():
                raise _fail(where, path, f"{x.tolist()} is not in {space}; its key would be wrong")
        return check_multi
    if isinstance(space, spaces.MultiBinary):
        def check_binary(batch: Any, where: str) -> None:
            x = np.asarray(batch)
            if x.size and not inside(space, x).all():
                raise _fail(where, path, f"{x.tolist()} is not 0/1 as {space} requires")
        return check_binary

    def check_nothing(batch: Any, where: str) -> None:
        return None
    return check_nothing


def _box_checker(space: spaces.Box, path: str, warned: set[str]) -> Check:
    low = np.broadcast_to(space.low, space.shape)
    high = np.broadcast_to(space.high, space.shape)
    finite_low, finite_high = bool(np.isfinite(low).any()), bool(np.isfinite(high).any())
    # the common case, one bound for every element: compare the batch's min and max only
    scalar = low.size > 0 and bool(np.all(low == low.flat[0]) and np.all(high == high.flat[0]))
    lo_s, hi_s = (float(low.flat[0]), float(high.flat[0])) if scalar else (0.0, 0.0)
    # integer bounds that span the whole dtype (uint8 in [0, 255]): a value of that dtype always fits
    whole = space.dtype is not None and np.dtype(space.dtype).kind in "iu" and bool(
        np.all(low <= np.iinfo(space.dtype).min) and np.all(high >= np.iinfo(space.dtype).max))

    def check_box(batch: Any, where: str) -> None:
        x = np.asarray(batch)
        if x.shape[1:] != space.shape:
            raise _fail(where, path, f"shape {x.shape[1:]} is not the space's {space.shape}")
        if path in warned or not x.size or not (finite_low or finite_high) or (whole and x.dtype == space.dtype):
            return
        if scalar:
            outside = (finite_low and x.min() < lo_s) or (finite_high and x.max() > hi_s)
        else:
            outside = bool(np.any(x < low) or np.any(x > high))
        if outside:
            flat = x.reshape(len(x), -1)
            bad = ~inside(space, x).reshape(len(x), -1)
            if not bad.any():  # (outside in float64, inside in the space's dtype, as contains() compares)
                return
            warned.add(path)
            r, c = np.unravel_index(int(np.argmax(bad)), bad.shape)
            warnings.warn(f"the env returned an observation outside its Box bounds at {where}{_label(path)}: "
                          f"{flat[r, c].item()!r} at index {tuple(int(i) for i in np.unravel_index(c, space.shape))} is "
                          f"outside [{low.reshape(-1)[c].item()!r}, {high.reshape(-1)[c].item()!r}]; keys of such observations do not "
                          "mean what the bounds promise (said once per wrapper)", UserWarning, stacklevel=4)
    return check_box
