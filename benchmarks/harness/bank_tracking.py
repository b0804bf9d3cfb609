"""A callback that records what the bank holds during training, by provenance."""

from __future__ import annotations

from typing import Any

from stable_baselines3.common.callbacks import BaseCallback

from experience_wrappers import ExperienceBank
from experience_wrappers.bank import Provenance
from experience_wrappers.validators import check_int

__all__ = ["BankTracker", "bank_snapshot"]


def bank_snapshot(bank: ExperienceBank) -> dict[str, Any]:
    """Per provenance (``extracted``, ``demo``, ``merged``): how many entries, their mean
    utility, and how many were ever credited.

    >>> bank_snapshot(ExperienceBank())["size"]
    0
    """
    cols = bank.entries()
    out: dict[str, Any] = {"size": len(bank)}
    if not cols:
        return out
    for prov in Provenance:
        mask = cols["provenance"] == int(prov)
        n = int(mask.sum())
        out[prov.name.lower()] = {"n": n, "credited": int((cols["n_credited"][mask] > 0).sum()),
                                  "mean_utility": float(cols["utility"][mask].mean()) if n else None}
    return out


class BankTracker(BaseCallback):
    """Every ``every`` rollouts, a :func:`bank_snapshot` with the step count, kept in ``history``."""

    def __init__(self, bank: ExperienceBank, every: int = 8) -> None:
        super().__init__()
        check_int("every", every, minimum=1)
        self.bank, self.every = bank, every
        self.history: list[dict[str, Any]] = []
        self._rollouts = 0

    def _on_step(self) -> bool:
        return True

    def _on_rollout_end(self) -> None:
        self._rollouts += 1
        if self._rollouts % self.every == 0:
            self.history.append({"steps": int(self.num_timesteps), **bank_snapshot(self.bank)})
