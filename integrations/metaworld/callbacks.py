"""Stable-Baselines3 callbacks for Meta-World training runs."""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback

from experience_wrappers.validators import check_int
from integrations.metaworld.constants import MT10_TASKS

__all__ = ["PerTaskSuccessCallback"]


class PerTaskSuccessCallback(BaseCallback):
    """Logs the rolling success rate of each task and their mean.

    At every episode end (``self.locals["dones"]``) it reads that env's final
    ``info`` and appends the episode's outcome to the task's window. Outcome,
    first found of: ``info["episode"]["success"]`` (``Monitor`` with
    ``info_keywords=("success", ...)``), ``info["is_success"]``,
    ``info["success"]`` — with the factories of :mod:`integrations.metaworld.envs`
    all three mean "success was reached at some step of the episode". Task,
    first found of: ``info["task_name"]``, ``task_names[info["task_id"]]``
    (also under ``info["episode"]``), else ``"env_<index>"``.

    Records, through ``self.logger.record`` (so they appear in the next dump):

    * ``<prefix>/success/<task_name>``: mean success over that task's last
      ``window`` episodes;
    * ``<prefix>/success_mean``: the unweighted mean of those rates over the
      tasks seen so far (the MT10 "average success rate");
    * ``<prefix>/episodes/<task_name>``: episodes seen for the task (if
      ``log_counts``).

    Values are recorded when an episode ends and again at each rollout end.

    Args:
        window: Episodes per task in the rolling mean.
        task_names: Names indexed by task id, used when infos carry only
            ``task_id``. Defaults to :data:`MT10_TASKS`.
        prefix: Logger key prefix.
        log_counts: Also record per-task episode counts.
        verbose: SB3 verbosity.

    Raises:
        ValueError: If ``window`` is not a positive int.
    """

    def __init__(
        self,
        window: int = 100,
        task_names: Sequence[str] | None = None,
        prefix: str = "metaworld",
        log_counts: bool = False,
        verbose: int = 0,
    ) -> None:
        super().__init__(verbose=verbose)
        self.window: int = check_int("window", window, minimum=1, numpy=True)  # type: ignore[assignment]
        self.task_names: tuple[str, ...] = tuple(MT10_TASKS if task_names is None else task_names)
        if not isinstance(prefix, str):
            raise TypeError(f"prefix must be a str (a logger key prefix, e.g. 'metaworld'), got {prefix!r}")
        self.prefix = prefix.rstrip("/")
        self.log_counts = bool(log_counts)
        self._outcomes: dict[str, deque[float]] = {}
        self._counts: dict[str, int] = {}

    @property
    def success_rates(self) -> dict[str, float]:
        """Rolling success rate per task seen so far."""
        return {name: float(np.mean(buf)) for name, buf in self._outcomes.items() if buf}

    @property
    def episode_counts(self) -> dict[str, int]:
        """Episodes seen per task."""
        return dict(self._counts)

    @property
    def success_mean(self) -> float | None:
        """Mean of :attr:`success_rates` over tasks, or ``None`` before any episode ended."""
        rates = self.success_rates
        return float(np.mean(list(rates.values()))) if rates else None

    def _on_step(self) -> bool:
        dones = self.locals.get("dones")
        infos = self.locals.get("infos")
        if dones is None or infos is None:
            return True
        ended = False
        for env_index, (done, info) in enumerate(
            zip(np.asarray(dones).reshape(-1), infos, strict=True)
        ):
            if not done:
                continue
            success = self._success_of(info)
            if success is None:
                continue
            name = self._task_of(info, env_index)
            buf = self._outcomes.setdefault(name, deque(maxlen=self.window))
            buf.append(float(success))
            self._counts[name] = self._counts.get(name, 0) + 1
            ended = True
        if ended:
            self._record()
        return True

    def _on_rollout_end(self) -> None:
        self._record()

    def _record(self) -> None:
        rates = self.success_rates
        if not rates or getattr(self, "model", None) is None:
            return
        for name, rate in rates.items():
            self.logger.record(f"{self.prefix}/success/{name}", rate)
            if self.log_counts:
                self.logger.record(f"{self.prefix}/episodes/{name}", self._counts[name])
        self.logger.record(f"{self.prefix}/success_mean", float(np.mean(list(rates.values()))))

    @staticmethod
    def _success_of(info: Mapping[str, Any]) -> bool | None:
        episode = info.get("episode")
        if isinstance(episode, Mapping) and "success" in episode:
            return bool(episode["success"])
        for key in ("is_success", "success"):
            if key in info:
                return bool(info[key])
        return None

    def _task_of(self, info: Mapping[str, Any], env_index: int) -> str:
        name = info.get("task_name")
        if isinstance(name, str):
            return name
        task_id = info.get("task_id")
        episode = info.get("episode")
        if task_id is None and isinstance(episode, Mapping):
            task_id = episode.get("task_id")
        if task_id is not None:
            task_id = int(task_id)
            if 0 <= task_id < len(self.task_names):
                return self.task_names[task_id]
            return f"task_{task_id}"
        return f"env_{env_index}"
