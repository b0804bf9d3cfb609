"""rl-baselines3-zoo's hyperparameter files, read as rl-zoo3 reads them.

rl-zoo3's ``hyperparams/ppo.yml`` gives one block per env id. Its values are plain numbers
except the linear schedules, ``lin_<x>`` (``learning_rate: lin_0.001``: ``x`` times the
fraction of training left, which is what SB3 passes a schedule), and its ``policy`` and
``policy_kwargs``, which the runner's arms decide (each arm builds its own network): those two
are skipped, with one line saying so. Keys the runner cannot apply (``normalize``,
``frame_stack``, ``env_wrapper``, ...) are refused before the first run, as is any value out
of range. ``tuned_from`` (ours) names where a block's values come from; the report shows it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["SKIPPED_KEYS", "NOTE_KEYS", "LinearToZero", "schedule", "check_values", "applied", "skipped"]

#: rl-zoo3 keys the runner skips (said once), and why
SKIPPED_KEYS = {"policy": "each arm chooses its policy",
                "policy_kwargs": "each arm builds its network (the env family's encoder; the CRL reader on top)"}
#: keys that describe a block and are not applied
NOTE_KEYS = ("tuned_from",)

#: (kind, minimum, maximum, minimum exclusive) of each value the runner applies
_RANGES: dict[str, tuple[type, float, float, bool]] = {
    "n_envs": (int, 1, float("inf"), False), "n_timesteps": (int, 1, float("inf"), False),
    "n_steps": (int, 1, float("inf"), False), "batch_size": (int, 1, float("inf"), False),
    "n_epochs": (int, 1, float("inf"), False), "learning_rate": (float, 0.0, float("inf"), True),
    "clip_range": (float, 0.0, float("inf"), True), "gamma": (float, 0.0, 1.0, True),
    "gae_lambda": (float, 0.0, 1.0, False), "ent_coef": (float, 0.0, float("inf"), False),
    "vf_coef": (float, 0.0, float("inf"), False), "max_grad_norm": (float, 0.0, float("inf"), True),
}
_SCHEDULED = ("learning_rate", "clip_range")


def schedule(value: Any) -> float | Callable[[float], float]:
    """A value as SB3 takes it: ``lin_<x>`` -> ``progress_remaining * x``; numbers as they are.

    >>> schedule("lin_0.001")(0.5), schedule(3e-4)
    (0.0005, 0.0003)
    """
    if isinstance(value, str) and value.startswith("lin_"):
        return LinearToZero(float(value[4:]))
    return value


class LinearToZero:
    """``progress_remaining * start``: rl-zoo's ``lin_<start>``, as an object a saved run can hold
    (its one attribute is its constructor's argument; a lambda cannot be saved).

    >>> LinearToZero(0.001)(0.25)
    0.00025
    """

    def __init__(self, start: float) -> None:
        self.start = start

    def __call__(self, progress_remaining: float) -> float:
        return progress_remaining * self.start

    def __repr__(self) -> str:
        return f"LinearToZero({self.start!r})"


def _number(key: str, value: Any) -> float:
    if isinstance(value, str) and value.startswith("lin_") and key in _SCHEDULED:
        value = value[4:]
        try:
            return float(value)
        except ValueError:
            raise ValueError(f"{key}: lin_{value} is not a linear schedule (lin_<number>)") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{key}: {value!r} is not a number" + (" (or lin_<number>)" if key in _SCHEDULED else ""))
    return float(value)


def check_values(hyper: dict[str, Any]) -> list[str]:
    """Every value out of type or range, as ``"key: why"`` (empty: all good).

    >>> check_values({"n_envs": 0, "learning_rate": "lin_abc", "gamma": 0.99, "batch_size": 64.5})
    ['n_envs: 0 is not in [1, inf]', 'learning_rate: lin_abc is not a linear schedule (lin_<number>)', 'batch_size: 64.5 is not an int']
    """
    problems = []
    for key, value in hyper.items():
        if key not in _RANGES:
            continue
        kind, lo, hi, open_lo = _RANGES[key]
        try:
            x = _number(key, value)
        except ValueError as exc:
            problems.append(str(exc))
            continue
        if kind is int and x != int(x):
            problems.append(f"{key}: {value!r} is not an int")
        elif not (lo < x <= hi if open_lo else lo <= x <= hi):
            problems.append(f"{key}: {value!r} is not in {'(' if open_lo else '['}{lo:g}, {hi:g}]")
    return problems


def skipped(hyper: dict[str, Any]) -> list[str]:
    """The rl-zoo3 keys of ``hyper`` the runner skips, each with why."""
    return [f"{k} ({SKIPPED_KEYS[k]})" for k in hyper if k in SKIPPED_KEYS]


def applied(hyper: dict[str, Any]) -> dict[str, Any]:
    """``hyper`` without the skipped and note keys (what the run uses; schedules still as strings)."""
    return {k: v for k, v in hyper.items() if k not in SKIPPED_KEYS and k not in NOTE_KEYS}
