"""``TrialsLogCallback``: a run-scope run's success by trial, through SB3's logger."""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback

from experience_wrappers.trials.wrapper import TRIAL_INFO_KEY
from experience_wrappers.validators import check_int

__all__ = ["TrialsLogCallback"]


class TrialsLogCallback(BaseCallback):
    """Success of the training trials, guided and free, and the guided ones by trial index.

    Every ``every`` steps it records ``trials/guided``, ``trials/free`` (the mean success of the
    last ``window`` trials of each kind) and ``trials/guided_trial_<i>`` (of the last
    ``window // 2`` guided trials at index ``i``) with SB3's logger (printed with ``verbose=1``,
    written to TensorBoard with ``tensorboard_log``), and appends them to :attr:`curve`.

    Args:
        trials: trials per run (``K``).
        every: steps between records.
        window: trials averaged per kind.
    """

    def __init__(self, trials: int, every: int = 8192, window: int = 400) -> None:
        super().__init__()
        self.trials = check_int("trials", trials, minimum=1)
        self.every = check_int("every", every, minimum=1)
        window = check_int("window", window, minimum=2)
        self.recent: dict[str, deque[float]] = {"guided": deque(maxlen=window), "free": deque(maxlen=window)}
        self.by_trial: list[deque[float]] = [deque(maxlen=window // 2) for _ in range(self.trials)]
        #: one record per ``every`` steps: ``{"step", "guided", "free", "guided_by_trial"}``
        self.curve: list[dict[str, Any]] = []
        self._next = self.every

    def _on_step(self) -> bool:
        for info in self.locals["infos"]:
            if "trial_success" not in info:
                continue
            trial = info[TRIAL_INFO_KEY]
            guided = bool(trial.get("guided", True))
            self.recent["guided" if guided else "free"].append(float(info["trial_success"]))
            if guided and int(trial["index"]) < self.trials:
                self.by_trial[int(trial["index"])].append(float(info["trial_success"]))
        if self.num_timesteps >= self._next:
            # the next multiple of ``every`` (a run loaded at any step count records on the same grid, once)
            self._next = (self.num_timesteps // self.every + 1) * self.every
            self.curve.append({"step": int(self.num_timesteps), **self.snapshot()})
            snap = self.curve[-1]
            for kind in ("guided", "free"):
                if snap[kind] is not None:
                    self.logger.record(f"trials/{kind}", snap[kind])
            for i, value in enumerate(snap["guided_by_trial"]):
                if value is not None:
                    self.logger.record(f"trials/guided_trial_{i + 1}", value)
        return True

    def snapshot(self) -> dict[str, Any]:
        """The current means: ``{"guided", "free", "guided_by_trial"}`` (None where no trial ended yet)."""
        def mean(xs: Any) -> float | None:
            return round(float(np.mean(xs)), 3) if len(xs) else None
        return {"guided": mean(self.recent["guided"]), "free": mean(self.recent["free"]),
                "guided_by_trial": [mean(d) for d in self.by_trial]}
