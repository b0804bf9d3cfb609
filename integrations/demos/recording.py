"""Producing demonstrations: roll out a policy (trained or scripted) and save the episodes."""

from __future__ import annotations

import json
import os
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from experience_wrappers.errors import DemonstrationFileError
from experience_wrappers.keys.base import stack_observations
from experience_wrappers.manager import success_from_info
from experience_wrappers.validators import check_int
from experience_wrappers.whole_numbers import is_step_action
from experience_wrappers.wrappers import ExperienceWrapper

from .trajectories import Demonstration

__all__ = ["record_demonstrations", "save_demonstrations", "load_demonstrations"]

FORMAT, VERSION = "complementary-rl.demonstrations", 1


def record_demonstrations(env: gym.Env, policy: Callable[[Any], Any], n_episodes: int, seed: int = 0,
                          only_successful: bool = False, max_attempts: int | None = None) -> list[Demonstration]:
    """Roll ``policy(obs) -> action`` out in ``env`` (unwrapped by any experience wrapper).

    A trained SB3 model works as ``lambda obs: model.predict(obs, deterministic=True)[0]``;
    a policy with a ``reset()`` method (a scripted one that keeps memory) is reset before
    each episode.
    With ``only_successful`` only successful episodes are kept, trying at most
    ``max_attempts`` episodes (default ``10 * n_episodes``). Episode ``i`` is reset with seed
    ``seed + i``.

    Raises:
        ValueError / TypeError: ``n_episodes`` or ``max_attempts`` not an int >= 1, ``seed`` not an
            int >= 0 (named); the policy returned an action outside the env's action space
            (before the env takes it).
        RuntimeError: fewer than ``n_episodes`` were kept within ``max_attempts`` (the counts named).
    """
    n_episodes = check_int("n_episodes", n_episodes, minimum=1, numpy=True, type_error=TypeError)
    seed = check_int("seed", seed, minimum=0, numpy=True, type_error=TypeError)
    layer: Any = env
    while layer is not None:  # the rollouts would enter its bank, and the demonstrations carry its keys
        if isinstance(layer, ExperienceWrapper):
            raise ValueError("record_demonstrations needs the env without its ExperienceWrapper (its rollouts would "
                             "enter the wrapper's bank and the demonstrations carry the experience keys): record on "
                             "the plain env, e.g. wrapper.env")
        layer = getattr(layer, "env", None)
    max_attempts = check_int("max_attempts", max_attempts, minimum=1, numpy=True, optional=True,
                             type_error=TypeError)
    demos: list[Demonstration] = []
    attempts = 0
    limit = 10 * n_episodes if max_attempts is None else max_attempts
    while len(demos) < n_episodes and attempts < limit:
        obs, info = env.reset(seed=seed + attempts)
        reset = getattr(policy, "reset", None)
        if callable(reset):
            reset()
        attempts += 1
        frames: list[Any] = []
        actions: list[np.ndarray] = []
        rewards: list[float] = []
        while True:
            action = policy(obs)
            if action is None or not is_step_action(action, env.action_space):
                raise ValueError(f"the policy returned {action!r} at step {len(actions)} of episode {attempts}, "
                                 f"not an action of the env's {env.action_space}")
            frames.append(obs)
            actions.append(np.asarray(action))
            obs, reward, terminated, truncated, info = env.step(action)
            rewards.append(float(reward))
            if terminated or truncated:
                break
        success = success_from_info(info)
        if only_successful and not success:
            continue
        demos.append(Demonstration(observations=stack_observations(frames), actions=np.stack(actions),
                                   rewards=np.asarray(rewards), success=success))
    if len(demos) < n_episodes:
        raise RuntimeError(f"record_demonstrations: {len(demos)} of the {n_episodes} episodes asked after {attempts} "
                           f"attempts (max_attempts {limit}" + (", successful ones kept" if only_successful else "")
                           + "); raise max_attempts or ask for fewer")
    return demos


def check_savable(demos: list[Demonstration]) -> None:
    """Refuse demonstrations the file's offsets would misplace: observations (every key) of ``T`` or
    ``T + 1`` rows for ``T`` actions, ``T`` rewards, and one layout of observations and actions for all
    (each error names the demonstration)."""
    first = demos[0]
    for i, d in enumerate(demos):
        if not isinstance(d, Demonstration):
            raise TypeError(f"demonstration {i} is a {type(d).__name__}, not a Demonstration "
                            "(integrations.demos.as_demonstrations converts dicts and trajectories)")
        n = len(d.actions)
        if isinstance(d.observations, dict) != isinstance(first.observations, dict) or (
                isinstance(d.observations, dict) and set(d.observations) != set(first.observations)):
            raise ValueError(f"demonstration {i}'s observations are not laid out as demonstration 0's")
        rows = [len(v) for v in d.observations.values()] if isinstance(d.observations, dict) else [len(d.observations)]
        if any(r not in (n, n + 1) for r in rows):
            raise ValueError(f"demonstration {i}: {rows} observations for {n} actions; expected {n} or {n + 1}")
        if n == 0:
            raise ValueError(f"demonstration {i} has no step (no action): nothing to show or imitate")
        if np.shape(d.rewards) != (n,):
            raise ValueError(f"demonstration {i}: rewards of shape {np.shape(d.rewards)} for {n} actions")
        if not np.all(np.isfinite(np.asarray(d.rewards, dtype=np.float64))):
            raise ValueError(f"demonstration {i}: a reward is NaN or inf")
        if np.shape(d.actions)[1:] != np.shape(first.actions)[1:]:
            raise ValueError(f"demonstration {i}'s actions have shape {np.shape(d.actions)[1:]} per step, "
                             f"demonstration 0's {np.shape(first.actions)[1:]}")


def save_demonstrations(path: str | Path, demos: list[Demonstration]) -> Path:
    """Write demonstrations to one ``.npz`` (concatenated arrays plus offsets; no pickle); returns
    the file written (``.npz`` is added to a path without it, as numpy does). The file is written
    whole and then put in place, so a failed save leaves an earlier file of that name as it was.

    Raises:
        ValueError: ``path`` is a folder, or a demonstration cannot be saved (:func:`check_savable`:
            one without a step, a NaN reward, a layout the file's offsets would misplace).
    """
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"demonstrations are saved as one .npz file, and {str(path)!r} is a folder; give a file "
                         f"path, e.g. {str(path / 'demonstrations.npz')!r}")
    if path.suffix != ".npz":
        path = path.with_name(path.name + ".npz")
    if not demos:
        raise ValueError("no demonstrations to save")
    check_savable(demos)
    lengths = np.array([len(d.actions) for d in demos], dtype=np.int64)
    arrays: dict[str, np.ndarray] = {"lengths": lengths, "actions": np.concatenate([d.actions for d in demos]),
                                     "rewards": np.concatenate([d.rewards for d in demos]),
                                     "success": np.array([-1 if d.success is None else int(d.success) for d in demos]),
                                     "task_id": np.array([d.task_id for d in demos], dtype=np.int64)}
    first = demos[0].observations
    if isinstance(first, dict):
        for key in first:
            arrays[f"obs/{key}"] = np.concatenate([np.asarray(d.observations[key])[: len(d.actions)] for d in demos])
    else:
        arrays["obs"] = np.concatenate([np.asarray(d.observations)[: len(d.actions)] for d in demos])
    arrays["meta"] = np.frombuffer(json.dumps({"format": FORMAT, "version": VERSION}).encode(), dtype=np.uint8)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "wb") as f:  # (a file object: numpy adds nothing to its name)
            np.savez_compressed(f, **arrays)  # type: ignore[arg-type]  # numpy stub: **arrays matched to allow_pickle: bool
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def load_demonstrations(path: str | Path) -> list[Demonstration]:
    """Read a file written by :func:`save_demonstrations` (raises DemonstrationFileError if it can't be trusted)."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(bytes(z["meta"]).decode())
            if not isinstance(meta, dict) or meta.get("format") != FORMAT or meta.get("version", 0) > VERSION:
                raise DemonstrationFileError(f"{str(path)!r} is not a demonstrations file of a version this library reads: {meta}")
            data = {k: z[k] for k in z.files}
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, json.JSONDecodeError) as exc:
        raise DemonstrationFileError(f"cannot read demonstrations from {str(path)!r}: {exc}") from exc
    try:
        return _demonstrations_of(data)
    except (KeyError, ValueError, IndexError, TypeError) as exc:
        raise DemonstrationFileError(f"{str(path)!r} is not a whole demonstrations file: {exc!r}") from exc


def _demonstrations_of(data: dict[str, np.ndarray]) -> list[Demonstration]:
    """The demonstrations of a file's arrays (KeyError / IndexError where one is missing or short)."""
    lengths = data["lengths"]
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    obs_keys = [k for k in data if k.startswith("obs/")]
    for name in ("actions", "rewards", *(obs_keys or ["obs"])):
        if len(data[name]) != offsets[-1]:
            raise ValueError(f"{name} holds {len(data[name])} rows, the lengths say {int(offsets[-1])}")
    demos = []
    for i in range(len(lengths)):
        a, b = offsets[i], offsets[i + 1]
        obs = {k[4:]: data[k][a:b] for k in obs_keys} if obs_keys else data["obs"][a:b]
        s = int(data["success"][i])
        demos.append(Demonstration(observations=obs, actions=data["actions"][a:b], rewards=data["rewards"][a:b],
                                   success=None if s < 0 else bool(s), task_id=int(data["task_id"][i])))
    return demos
