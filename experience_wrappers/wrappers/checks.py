"""Checks on observations coming from the wrapped env."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["check_finite_observation"]


def check_finite_observation(obs: Any, where: str) -> None:
    """Raise a clear ValueError when a float observation holds NaN or inf.

    >>> check_finite_observation(np.array([0.0, np.nan]), "reset")
    Traceback (most recent call last):
    ...
    ValueError: the env returned an observation with NaN or inf at reset: [ 0. nan]
    """
    parts = obs.values() if isinstance(obs, dict) else obs if isinstance(obs, tuple) else (obs,)
    for part in parts:
        arr = np.asarray(part)
        if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
            raise ValueError(f"the env returned an observation with NaN or inf at {where}: {arr}")
