"""Hyperparameters from ``benchmarks/hyperparams/ppo.yml`` (rl-baselines3-zoo style)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

__all__ = ["load_hyperparams", "HYPERPARAMS"]

HYPERPARAMS = Path(__file__).resolve().parent / "hyperparams" / "ppo.yml"


def load_hyperparams(env_id: str, path: Path = HYPERPARAMS) -> dict[str, Any]:
    """The block for ``env_id`` (a clear error lists the known ids)."""
    table = yaml.safe_load(path.read_text())
    if env_id not in table:
        raise KeyError(f"no hyperparameters for {env_id!r} in {path}; known: {sorted(table)}")
    return dict(table[env_id])
