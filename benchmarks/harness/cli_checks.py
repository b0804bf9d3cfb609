"""The benchmark commands' argument checks, made before the first run: one line, exit code 2.

A bad seed or an output path that cannot be a folder would otherwise surface in a worker, as a
traceback after the first run's start, or only when the first result is written, after training.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterable
from pathlib import Path

__all__ = ["MAX_SEED", "bad_seeds", "check_gym_id", "check_output_folder", "check_output_file"]

#: the seeds numpy (and so SB3's set_random_seed) accepts
MAX_SEED = 2**32 - 1


def bad_seeds(seeds: Iterable[int] | None) -> str | None:
    """What is wrong with ``--seeds`` (None: nothing).

    >>> bad_seeds([0, 3]) is None, bad_seeds([-5, 1])
    (True, '--seeds: -5 is not in [0, 2**32 - 1]')
    """
    bad = [s for s in seeds or () if not 0 <= s <= MAX_SEED]
    if not bad:
        return None
    return f"--seeds: {', '.join(map(str, bad))} {'is' if len(bad) == 1 else 'are'} not in [0, 2**32 - 1]"


def check_output_folder(path: Path, flag: str) -> None:
    """Raise ValueError (one line) if the command could not make ``path`` a folder and write in it.

    Checked before the first run, so a mistyped ``--results``, ``--out`` or ``--tensorboard``
    does not surface only after training, in the worker that writes there.
    """
    for part in (path, *path.parents):
        if not part.exists():
            continue
        if not part.is_dir():
            raise ValueError(f"{flag} {path}: {part} is a file, "
                             + ("not a folder" if part == path else "so no folder can be made under it"))
        if not os.access(part, os.W_OK | os.X_OK):
            raise ValueError(f"{flag} {path}: {part} is not writable")
        return


def check_output_file(path: Path, flag: str) -> None:
    """Raise ValueError (one line) if the command could not write the file ``path``: it is a folder,
    or its folder could not be made or written (:func:`check_output_folder`). Checked before the
    measuring, so that a mistyped ``--out`` does not throw minutes of work away at the end."""
    if path.is_dir():
        raise ValueError(f"{flag} {path}: a folder, not a file (give the file's name, e.g. {path / 'result.json'})")
    try:
        check_output_folder(path.parent, flag)
    except ValueError as exc:  # named by the file given, not its folder
        raise ValueError(f"{flag} {path}: {str(exc).split(': ', 1)[1]}") from None


def check_gym_id(env_id: str) -> None:
    """Raise ValueError (one line) if gymnasium knows no env ``env_id``; gymnasium's ``"module:EnvId"`` form (an
    env of your own, registered when its module is imported) imports the module first, as ``gym.make`` does.

    >>> check_gym_id("CartPole-v1")
    >>> check_gym_id("no_such_module_here:Thing-v0")
    Traceback (most recent call last):
    ...
    ValueError: 'no_such_module_here:Thing-v0': the module 'no_such_module_here' cannot be imported (No module named 'no_such_module_here')
    """
    import gymnasium as gym

    name = env_id
    if ":" in env_id:
        module, _, name = env_id.partition(":")
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise ValueError(f"{env_id!r}: the module {module!r} cannot be imported ({exc})") from None
    try:
        gym.spec(name)
    except gym.error.Error as exc:
        raise ValueError(f"{env_id!r}: {exc}") from None
