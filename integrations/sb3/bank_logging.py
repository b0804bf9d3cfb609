"""What the bank holds, as TensorBoard histograms and figures through SB3's logger."""

from __future__ import annotations

import numpy as np
import torch
from stable_baselines3.common.logger import Figure, Logger, TensorBoardOutputFormat

from experience_wrappers import ExperienceBank
from experience_wrappers.bank import Provenance

__all__ = ["log_bank_distributions"]

_TB_ONLY = ("stdout", "log", "json", "csv")


def log_bank_distributions(logger: Logger, bank: ExperienceBank, figures: bool = True) -> bool:
    """Record ``bank/utility`` and ``bank/retrievals`` histograms (per provenance too) and, with
    ``figures``, a utility-vs-retrievals figure, for TensorBoard only.

    Does nothing (and returns False) when the logger has no TensorBoard output or the bank is
    empty: the same numbers as ``python -m experience_wrappers.inspect`` prints for a saved bank.
    """
    if not any(isinstance(f, TensorBoardOutputFormat) for f in logger.output_formats) or len(bank) == 0:
        return False
    cols = bank.entries()
    util, retrieved, prov = cols["utility"], cols["n_retrieved"], cols["provenance"]
    logger.record("bank/utility", torch.as_tensor(util), exclude=_TB_ONLY)
    logger.record("bank/retrievals", torch.as_tensor(retrieved.astype(np.float64)), exclude=_TB_ONLY)
    for p in Provenance:
        sel = prov == int(p)
        if sel.any():
            logger.record(f"bank/utility_{p.name.lower()}", torch.as_tensor(util[sel]), exclude=_TB_ONLY)
    if figures:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(5, 3.2))
        for p in Provenance:
            sel = prov == int(p)
            if sel.any():
                ax.scatter(util[sel], retrieved[sel], s=6, alpha=0.6, label=p.name.lower())
        ax.set_xlabel("utility")
        ax.set_ylabel("times retrieved")
        ax.legend(fontsize=7)
        fig.tight_layout()
        logger.record("bank/retrievals_vs_utility", Figure(fig, close=True), exclude=_TB_ONLY)
    return True
