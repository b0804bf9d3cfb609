"""What the Ray test modules share: a fresh local Ray per module."""

from __future__ import annotations

from collections.abc import Iterator


def local_ray(namespace: str | None = None) -> Iterator[None]:
    """A fresh local Ray of 2 CPUs for one test module (``yield from local_ray(...)`` in its fixture)."""
    import ray

    if ray.is_initialized():
        ray.shutdown()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, namespace=namespace)
    yield
    ray.shutdown()
