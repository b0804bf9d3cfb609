"""Training the experience extractor: policy gradient on outcomes plus auxiliary losses."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..errors import ExtractorFileError
from ..validators import integral
from .config import ExtractorConfig
from .losses import (
    batch_advantages,
    cispo_loss,
    count_aware_weights,
    decoder_loss,
    diversity_loss,
    inverse_dynamics_loss,
    steps_to_go_loss,
    utility_loss,
)
from .network import ExperienceExtractor, ExtractorOutput

__all__ = ["ExtractorTrainer", "FILE_FORMAT", "FILE_VERSION"]

FILE_FORMAT = "complementary-rl/extractor"
FILE_VERSION = 1


def _vector(name: str, value: object, n: int | None, dim: int | None = None) -> np.ndarray:
    """Check a finite real array of shape ``(n,)`` (or ``(n, dim)``); return it as float32."""
    arr = np.asarray(value)
    if not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        raise ValueError(f"{name} must be a real-valued array, got dtype {arr.dtype}")
    shape = (n,) if dim is None else (n, dim)
    if (
        arr.ndim != len(shape)
        or (n is not None and arr.shape[0] != n)
        or (dim is not None and arr.shape[1] != dim)
    ):
        want = tuple("B" if s is None else s for s in shape)
        raise ValueError(f"{name} must have shape {want}, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got NaN or inf")
    return arr.astype(np.float32)


def _item(t: torch.Tensor) -> float:
    return float(t.detach().cpu())


class ExtractorTrainer:
    """Adam on an :class:`ExperienceExtractor`, with the full objective and a save format.

    The objective of :meth:`update` (one gradient step) is::

        cispo(logp(z), logp_old, rewards - mean(rewards), count-aware weights, clip)
        + utility_coef * mse(utility, rewards)
        + diversity_coef * mean off-diagonal cosine similarity of the means
        + ssl_coef * (steps-to-go loss + inverse-dynamics loss + decoder loss)

    Gradients are clipped to ``max_grad_norm``. The utility regression uses every sample
    with weight 1 (the count-aware weights only gate the policy gradient).

    Args:
        extractor: the network to train; its config gives the learning rate and weights.

    >>> from experience_wrappers.extractor.segments import encode_segment
    >>> cfg = ExtractorConfig(state_dim=1, action_dim=2, exp_dim=3, hidden=8, max_len=4)
    >>> trainer = ExtractorTrainer(ExperienceExtractor(cfg))
    >>> ctx = np.stack([encode_segment(np.zeros((3, 1)), np.eye(2)[[0, 1, 0]], np.ones(3), 4)] * 2)
    >>> z, logp, _ = trainer.extractor.propose(ctx)
    >>> stats = trainer.update(ctx, z, logp, np.array([1.0, 0.0]), np.zeros(2), np.zeros(2, bool))
    >>> trainer.updates, stats["n_samples"], stats["mean_weight"]
    (1, 2.0, 1.0)
    """

    def __init__(self, extractor: ExperienceExtractor) -> None:
        if not isinstance(extractor, ExperienceExtractor):
            raise TypeError(f"extractor must be an ExperienceExtractor, got {extractor!r}")
        self.extractor = extractor
        self.optimizer = torch.optim.Adam(extractor.parameters(), lr=extractor.config.lr)
        self.updates = 0

    @property
    def config(self) -> ExtractorConfig:
        """The extractor's config."""
        return self.extractor.config

    def _ssl(
        self, out: ExtractorOutput, inputs: torch.Tensor, lengths: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        cfg = self.config
        actions = inputs[..., cfg.state_dim : cfg.state_dim + cfg.action_dim]
        stg = steps_to_go_loss(out.steps_to_go, lengths.to(out.steps_to_go.device))
        inv = inverse_dynamics_loss(
            out.inverse, actions, lengths.to(out.inverse.device), cfg.discrete_actions
        )
        dec = decoder_loss(out.decoded, inputs.to(out.decoded.device), lengths, cfg.state_dim, cfg.action_dim,
                           cfg.discrete_actions)
        return stg, inv, dec

    def _step(self, loss: torch.Tensor) -> float:
        if not bool(torch.isfinite(loss)):
            raise FloatingPointError(
                f"extractor loss is {_item(loss)}; no step taken (lower lr or check the inputs)"
            )
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(
            self.extractor.parameters(), self.config.max_grad_norm
        )
        self.optimizer.step()
        self.updates += 1
        return _item(grad_norm)

    def update(
        self,
        contexts: np.ndarray,
        z: np.ndarray,
        logp_old: np.ndarray,
        rewards: np.ndarray,
        n_trained: np.ndarray,
        trained_recently: np.ndarray,
    ) -> dict[str, float]:
        """One gradient step on the full objective for a batch of proposed experiences.

        Args:
            contexts: ``(B, context_size)`` the contexts the experiences were proposed for.
            z: ``(B, exp_dim)`` the sampled experience vectors.
            logp_old: ``(B,)`` their log-probabilities when sampled.
            rewards: ``(B,)`` the reward each experience earned (e.g. its outcome delta).
            n_trained: ``(B,)`` how many times each sample was already trained on.
            trained_recently: ``(B,)`` bool, samples trained on very recently (weight 0).

        Returns:
            Floats: ``loss``, ``pg_loss``, ``utility_loss``, ``diversity_loss``,
            ``ssl_loss``, ``steps_to_go_loss``, ``inverse_loss``, ``n_samples``,
            ``mean_weight``, ``log_std_mean``, ``clip_fraction`` (share of samples whose
            importance weight was clipped) and ``grad_norm`` (before clipping).

        Raises:
            ValueError: wrong shapes, NaN/inf, negative counts, non-bool ``trained_recently``.
        """
        cfg = self.config
        inputs, lengths = self.extractor.decode(contexts)
        b = inputs.shape[0]
        if b == 0:
            raise ValueError("contexts must hold at least one sample, got an empty batch")
        z_arr = _vector("z", z, b, cfg.exp_dim)
        logp_arr = _vector("logp_old", logp_old, b)
        r_arr = _vector("rewards", rewards, b)
        n_arr = _vector("n_trained", n_trained, b)
        recent = np.asarray(trained_recently)
        if recent.shape != (b,):
            raise ValueError(f"trained_recently must have shape ({b},), got {recent.shape}")
        weights = count_aware_weights(n_arr, recent)
        adv = batch_advantages(r_arr)

        dev = self.extractor.device
        out = self.extractor(inputs, lengths)
        dist = self.extractor.around(out.mean)
        logp_new = dist.log_prob(torch.from_numpy(z_arr).to(dev))
        logp_old_t = torch.from_numpy(logp_arr).to(dev)
        pg = cispo_loss(
            logp_new,
            logp_old_t,
            torch.from_numpy(adv).to(dev),
            torch.from_numpy(weights).to(dev),
            cfg.clip,
        )
        util = utility_loss(out.utility, torch.from_numpy(r_arr).to(dev))
        div = diversity_loss(out.mean)
        stg, inv, dec = self._ssl(out, inputs, lengths)
        ssl = stg + inv + dec
        loss = pg + cfg.utility_coef * util + cfg.diversity_coef * div + cfg.ssl_coef * ssl
        with torch.no_grad():
            ratio = torch.exp(logp_new - logp_old_t)
            clipped = ((ratio < 1 - cfg.clip) | (ratio > 1 + cfg.clip)).float().mean()
        grad_norm = self._step(loss)
        return {
            "loss": _item(loss),
            "pg_loss": _item(pg),
            "utility_loss": _item(util),
            "diversity_loss": _item(div),
            "ssl_loss": _item(ssl),
            "steps_to_go_loss": _item(stg),
            "inverse_loss": _item(inv),
            "decoder_loss": _item(dec),
            "n_samples": float(b),
            "mean_weight": float(weights.mean()),
            "log_std_mean": _item(self.extractor.log_std.mean()),
            "clip_fraction": _item(clipped),
            "grad_norm": grad_norm,
        }

    def ssl_update(self, contexts: np.ndarray) -> dict[str, float]:
        """One gradient step on the self-supervised losses only (no outcome reward needed).

        The loss is ``steps-to-go + inverse dynamics + decoder`` (not scaled by ``ssl_coef``: this
        step is asked for explicitly).

        Returns:
            Floats: ``loss``, ``ssl_loss`` (the same value), ``steps_to_go_loss``,
            ``inverse_loss``, ``n_samples`` and ``grad_norm``.
        """
        inputs, lengths = self.extractor.decode(contexts)
        if inputs.shape[0] == 0:
            raise ValueError("contexts must hold at least one sample, got an empty batch")
        out = self.extractor(inputs, lengths)
        stg, inv, dec = self._ssl(out, inputs, lengths)
        loss = stg + inv + dec
        grad_norm = self._step(loss)
        return {
            "loss": _item(loss),
            "ssl_loss": _item(loss),
            "steps_to_go_loss": _item(stg),
            "inverse_loss": _item(inv),
            "decoder_loss": _item(dec),
            "n_samples": float(inputs.shape[0]),
            "grad_norm": grad_norm,
        }

    # ------------------------------------------------------------------ state and files

    def state_dict(self) -> dict[str, Any]:
        """Network, optimizer and update counter (tensors, plain containers and numbers)."""
        return {
            "model": self.extractor.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "updates": self.updates,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned.

        Raises:
            ValueError: missing keys or a bad update counter. torch raises for tensors
            of the wrong shape.
        """
        if not isinstance(state, dict) or not {"model", "optimizer", "updates"} <= state.keys():
            got = sorted(state) if isinstance(state, dict) else type(state).__name__
            raise ValueError(f"state must be a dict with model, optimizer and updates, got {got}")
        updates = state["updates"]
        if not integral(updates) or updates < 0:
            raise ValueError(f"state['updates'] must be an int >= 0, got {updates!r}")
        self.extractor.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.updates = updates

    def save(self, path: str | os.PathLike) -> None:
        """Write the trainer to one file (atomically: a crash leaves any old file intact).

        The file holds a plain dict ``{"format", "version", "config", "model",
        "optimizer", "updates"}`` written with :func:`torch.save`; :meth:`load` reads it
        with ``weights_only=True``, so loading never runs code from the file.
        """
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        payload = {
            "format": FILE_FORMAT,
            "version": FILE_VERSION,
            "config": self.config.to_dict(),
            **self.state_dict(),
        }
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                torch.save(payload, fh)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    @classmethod
    def load(
        cls, path: str | os.PathLike, map_location: str | torch.device = "cpu"
    ) -> ExtractorTrainer:
        """Rebuild a trainer (network, optimizer, counter) saved by :meth:`save`.

        Raises:
            ExtractorFileError: the file is missing, damaged, not an extractor file, or from a
                newer version of the library.
        """
        path = Path(path)
        if not path.is_file():
            raise ExtractorFileError(f"no extractor file at {str(path)!r}")
        try:
            payload = torch.load(path, map_location=map_location, weights_only=True)
        except Exception as exc:  # torch raises many types for truncated or foreign files
            raise ExtractorFileError(
                f"{str(path)!r} is damaged or not a torch file ({type(exc).__name__}: {exc})"
            ) from exc
        if not isinstance(payload, dict) or payload.get("format") != FILE_FORMAT:
            got = payload.get("format") if isinstance(payload, dict) else type(payload).__name__
            raise ExtractorFileError(
                f"{str(path)!r} is not an extractor file (format {FILE_FORMAT!r} expected, got {got!r})"
            )
        version = payload.get("version")
        if not integral(version) or version < 1:
            raise ExtractorFileError(f"{str(path)!r} has an invalid version {version!r}")
        if version > FILE_VERSION:
            raise ExtractorFileError(
                f"{str(path)!r} was written by a newer library (file version {version}, "
                f"this library reads up to {FILE_VERSION}); upgrade complementary-rl"
            )
        try:
            config = ExtractorConfig(**payload["config"])
            trainer = cls(ExperienceExtractor(config).to(map_location))
            trainer.load_state_dict(payload)
        except (KeyError, TypeError, ValueError, RuntimeError) as exc:
            raise ExtractorFileError(
                f"{str(path)!r} holds an unusable extractor ({type(exc).__name__}: {exc})"
            ) from exc
        return trainer
