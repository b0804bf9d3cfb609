"""The error of an experience service that cannot be reached (its own module: the service's handle and
the learner stand-in it gives envs both raise it)."""

from __future__ import annotations

__all__ = ["ServiceError"]


class ServiceError(RuntimeError):
    """The experience service cannot be reached: it was never started, was killed or shut down, or its node died."""
