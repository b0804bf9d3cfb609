"""Hyperparameters from ``benchmarks/hyperparams/ppo.yml`` (rl-baselines3-zoo style)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

__all__ = ["load_hyperparams", "read_hyperparams_file", "yaml_problem", "HYPERPARAMS"]

HYPERPARAMS = Path(__file__).resolve().parents[1] / "hyperparams" / "ppo.yml"


def yaml_problem(exc: yaml.YAMLError) -> str:
    """A YAML parse error in one line: what and where (YAML's own message spans several).

    >>> try:
    ...     yaml.safe_load("a: [1")
    ... except yaml.YAMLError as exc:
    ...     print(yaml_problem(exc))
    expected ',' or ']', but got '<stream end>' at line 1, column 6
    """
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    mark = getattr(exc, "problem_mark", None)
    return f"{problem} at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else problem


def read_hyperparams_file(path: Path = HYPERPARAMS) -> dict[str, dict[str, Any]]:
    """The whole zoo-style file: env id -> its block.

    Raises:
        ValueError: (one line) the file cannot be read, is not valid YAML, is not a mapping of env
            ids, or has a block that is not a mapping of keys to values.
    """
    path = Path(path)
    try:
        text = path.read_text()
    except IsADirectoryError:
        raise ValueError(f"cannot read hyperparameter file {path}: it is a folder, not a YAML file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read hyperparameter file {path}: {exc}") from None
    try:
        table = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(f"hyperparameter file {path} is not valid YAML: {yaml_problem(exc)}") from None
    if table is None:
        table = {}
    if not isinstance(table, dict):
        raise ValueError(f"{path} is not a zoo-style hyperparameter file (a mapping of env ids to blocks of "
                         f"key: value), it holds a {type(table).__name__}")
    for env_id, block in table.items():
        if not isinstance(block, dict):
            raise ValueError(f"{path}: the block for {env_id!r} is not a mapping of key: value "
                             f"(it is {block!r:.60})")
    return table


def load_hyperparams(env_id: str, path: Path = HYPERPARAMS) -> dict[str, Any]:
    """The block for ``env_id`` (a clear error lists the known ids).

    Raises:
        KeyError: the file has no block for ``env_id``.
        ValueError: the file is broken (see :func:`read_hyperparams_file`).
    """
    table = read_hyperparams_file(path)
    if env_id not in table:
        raise KeyError(f"no hyperparameters for {env_id!r} in {path}; known: {sorted(table)}")
    return dict(table[env_id])
