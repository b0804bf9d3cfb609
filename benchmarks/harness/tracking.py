"""A callback that records learning curves: rolling success (or return), episodes, wall-clock."""

from __future__ import annotations

import time
from collections import deque
from typing import Any

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback

from experience_wrappers.credit import OutcomeTracker
from experience_wrappers.manager import success_from_info

__all__ = ["CurveTracker"]


class CurveTracker(BaseCallback):
    """Rolling outcome over the last ``window`` finished episodes, recorded at every rollout's end.

    Outcome is success when the env reports it (``info["success"]`` / ``info["is_success"]``),
    else the episode return from SB3's Monitor. Guided and free episodes are also tracked
    separately when the env is experience-wrapped.

    ``first_reached`` holds the steps at which the rolling outcome first reached each
    threshold, computed over the episodes there are (at least ``min(window, 20)``): success
    rates ``"0.9"`` where the env reports success, else returns ``"return:475"`` (the
    thresholds as fractions of the env spec's ``reward_threshold``; none if it has none).
    """

    def __init__(self, window: int = 100, thresholds: tuple[float, ...] = (0.5, 0.8, 0.9, 0.95)) -> None:
        super().__init__()
        self.window = window
        self.thresholds = thresholds
        self.recent: deque[float] = deque(maxlen=window)
        self.outcomes = OutcomeTracker(window)  # guided and free episodes, separately
        self.first_reached: dict[str, int | None] = {f"{t:g}": None for t in thresholds}
        self.episodes = 0
        self.curve: list[dict[str, Any]] = []
        self.uses_success: bool | None = None
        self._t0 = time.perf_counter()

    def _on_training_start(self) -> None:
        self._t0 = time.perf_counter()

    def _use_returns(self) -> None:
        """The env reports no success: thresholds in return units, from the spec's reward threshold."""
        try:
            spec = self.training_env.get_attr("spec", [0])[0]
        except (AttributeError, IndexError):
            spec = None
        target = getattr(spec, "reward_threshold", None)
        self.first_reached = {f"return:{t * target:g}": None for t in self.thresholds} if target else {}

    def rate(self) -> float | None:
        return float(np.mean(self.recent)) if len(self.recent) >= min(self.window, 20) else None

    def _on_step(self) -> bool:
        for done, info in zip(self.locals["dones"], self.locals["infos"], strict=True):
            if not done:
                continue
            s = success_from_info(info)
            if self.uses_success is None:
                self.uses_success = s is not None
                if not self.uses_success:
                    self._use_returns()
            value = float(s) if s is not None else float(info.get("episode", {}).get("r", np.nan))
            self.recent.append(value)
            if "experience_guided" in info:
                self.outcomes.add(value, guided=bool(info["experience_guided"]))
            self.episodes += 1
            rate = self.rate()
            if rate is not None:
                for key, reached in self.first_reached.items():
                    level = float(key.split(":", 1)[1]) if key.startswith("return:") else float(key)
                    if reached is None and rate >= level:
                        self.first_reached[key] = int(self.num_timesteps)
        return True

    def _on_rollout_end(self) -> None:
        means = self.outcomes.means()
        self.curve.append({"steps": int(self.num_timesteps), "episodes": self.episodes,
                           "outcome": self.rate(), "guided": means["guided"], "free": means["free"],
                           "wall_s": round(time.perf_counter() - self._t0, 3)})
