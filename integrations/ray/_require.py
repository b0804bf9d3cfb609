"""Importing Ray lazily, with an error that names the extra to install."""

from __future__ import annotations

from types import ModuleType
from typing import Any

__all__ = ["require_ray", "ensure_connected", "RAY_EXTRA_HINT"]

RAY_EXTRA_HINT = "pip install 'complementary-rl[ray]'"


def require_ray() -> ModuleType:
    """The ``ray`` module, or ImportError naming the extra that installs it.

    >>> require_ray().__name__
    'ray'
    """
    try:
        import ray
    except ImportError as exc:  # pragma: no cover - the test environment has ray
        raise ImportError(
            f"the experience service needs Ray (Ray core only, no RLlib): {RAY_EXTRA_HINT}"
        ) from exc
    return ray


def ensure_connected(address: str | None = None, **init_kwargs: Any) -> ModuleType:
    """Connect this process to Ray unless it already is; returns the ``ray`` module.

    ``address=None`` starts a local Ray instance (what ``ray.init()`` does); an address
    (``"auto"``, ``"10.0.0.5:6379"`` or ``"ray://head:10001"``) joins an existing cluster.
    A process that is already connected (a Ray task or actor, or a driver that called
    ``ray.init``) is left as it is.
    """
    ray = require_ray()
    if not ray.is_initialized():
        if address is None:  # a new local instance: no dashboard, quiet workers
            init_kwargs.setdefault("include_dashboard", False)
            init_kwargs.setdefault("log_to_driver", False)
        ray.init(address=address, **init_kwargs)
    return ray
