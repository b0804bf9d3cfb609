"""Starting an experience service, or finding a running one: :func:`start_service` and :func:`connect`.

Everything :func:`start_service` can check in the caller's process is checked there, before an
actor exists (a bad dimension, thread count or restore folder is its own error, not the service
dying under its name); a service that still fails to start, or does not answer in time, is
killed so that its name is free again.
"""

from __future__ import annotations

import json
import logging
import math
import uuid
import warnings
from pathlib import Path
from typing import Any

import attrs

from experience_wrappers import BankConfig, ExperienceBank
from experience_wrappers.bank.config import resolve_config
from experience_wrappers.validators import check_int, check_real

from ._require import ensure_connected, require_ray
from .actor import ServiceActor
from .service import DEFAULT_NAMESPACE, OWNED, ExperienceService, ServiceError, absolute_path

log = logging.getLogger(__name__)

__all__ = ["start_service", "connect", "START_TIMEOUT"]

#: seconds :func:`start_service` waits for a new service's first answer (starting a Ray worker
#: takes seconds), whatever its per-call ``timeout``
START_TIMEOUT = 120.0


def _cluster_address(ray: Any, address: str | None) -> str | None:
    """An address other processes can join: the GCS address, or the ``ray://`` one given."""
    if address is not None and address.startswith("ray://"):
        return address
    try:
        return ray.get_runtime_context().gcs_address
    except Exception:  # noqa: BLE001 - older Ray or client mode: keep what was given
        return address


def _check_arguments(key_dim: int | None, value_dim: int | None, context_dim: int, torch_threads: int | None,
                     switch_interval: float | None, restore: str | Path | None, timeout: float | None,
                     local: bool = True) -> None:
    """What the service's constructor would refuse, refused here with its own error."""
    if (key_dim is None) != (value_dim is None):
        raise ValueError(f"key_dim and value_dim fix the bank's dims together: give both or neither, got key_dim="
                         f"{key_dim!r}, value_dim={value_dim!r}")
    if key_dim is not None:
        check_int("key_dim", key_dim, minimum=1, numpy=True)
        check_int("value_dim", value_dim, minimum=1, numpy=True)
    check_int("context_dim", context_dim, minimum=0, numpy=True)
    check_int("torch_threads", torch_threads, minimum=1, optional=True, hint=" or None")
    check_real("switch_interval", switch_interval, minimum=1e-6, optional=True)
    if timeout is not None:
        check_real("timeout", timeout, minimum=1e-9)
    if restore is not None:
        folder = Path(restore).expanduser()
        if folder.exists() and (not folder.is_dir() or not any(folder.iterdir())):
            raise ValueError(f"restore={str(restore)!r} is {'a file' if not folder.is_dir() else 'an empty folder'}: "
                             "give a bank folder (ExperienceBank.save, service.save) or a path that does not exist "
                             "yet (the service saves there to checkpoint)")
        if local and folder.is_dir():  # (seen from here: only a local Ray's service reads the same path)
            _check_bank_folder(folder, restore)


def _check_bank_folder(folder: Path, restore: str | Path) -> None:
    """Refuse a folder that holds no bank save (a run's or a manager's folder, say), naming what it holds."""
    try:
        found = json.loads((folder / "meta.json").read_text()).get("format")
    except (OSError, ValueError, AttributeError):
        found = None
    if found != ExperienceBank.FORMAT:
        what = f"a {found!r} save" if isinstance(found, str) else "no bank save (no readable meta.json)"
        hint = (" (a manager's state: service.restore_state(path) after the start)" if found and "manager" in found
                else " (a run's folder holds its bank under experience/bank)" if (folder / "experience").is_dir()
                else "")
        raise ValueError(f"restore={str(restore)!r} holds {what}, not a bank folder{hint}: give a folder written "
                         "by ExperienceBank.save or service.save")


def start_service(config: BankConfig | None = None, *, name: str | None = None, address: str | None = None,
                  namespace: str = DEFAULT_NAMESPACE, restore: str | Path | None = None,
                  key_dim: int | None = None, value_dim: int | None = None, context_dim: int = 0, num_cpus: float = 1.0, max_restarts: int = 0,
                  detached: bool = False, timeout: float | None = 60.0, torch_threads: int | None = 1,
                  switch_interval: float | None = 0.0005,
                  ray_init_kwargs: dict[str, Any] | None = None, **bank_overrides: Any) -> ExperienceService:
    """Start an experience service (a named Ray actor holding one bank) and return its handle.

    The service lives until :meth:`ExperienceService.shutdown` or the end of this driver (with
    ``detached``, past it): this process keeps a Ray handle on it, so dropping the returned
    handle, or finding the service again with :func:`connect`, does not stop it.

    Args:
        config: the bank's :class:`BankConfig`; keyword overrides build one
            (``start_service(capacity=100_000)``).
        name: the actor's name (default: a fresh unique one); :func:`connect` finds it by it.
        address: ``None`` starts a local Ray instance when this process is not connected
            (``ray.init()``); ``"auto"``, ``"host:6379"`` or ``"ray://host:10001"`` joins a cluster.
        namespace: the Ray namespace the actor is registered in.
        restore: a bank folder to start from when it exists (also what a restarted actor
            reloads: save there to checkpoint). The saved bank brings its own config and dims:
            where ``config``, overrides or dims given here differ from them, a warning says so.
        key_dim, value_dim, context_dim: fix the bank's dims up front (``key_dim`` and ``value_dim`` together).
        num_cpus: CPUs Ray reserves for the service (its learner trains there); more than the
            cluster has is refused.
        max_restarts: how often Ray restarts the service if its process dies (it comes back
            from ``restore``); calls made while it is down raise :class:`ServiceError`.
        detached: outlive this driver (stop it with :meth:`ExperienceService.shutdown`).
        timeout: seconds a call waits for an answer (None: forever); the service's start is
            given :data:`START_TIMEOUT` at least.
        torch_threads, switch_interval: the service process's torch threads and GIL switch
            interval (see :class:`ServiceActor`).
        ray_init_kwargs: passed to ``ray.init`` when this function connects the process.

    Raises:
        ImportError: Ray is not installed (it names the ``[ray]`` extra).
        ValueError / TypeError: a bad argument, before any actor is started (a ``name`` in use included).
        ServiceError: the service failed to start (its own error in the message); it is killed.
        TimeoutError: it did not answer within the start's time; it is killed.
    """
    requested = resolve_config(config, bank_overrides)
    max_restarts = check_int("max_restarts", max_restarts, minimum=-1, hint=" (-1: forever)")
    if not (math.isfinite(num_cpus) and num_cpus >= 0):
        raise ValueError(f"num_cpus must be a finite number >= 0, got {num_cpus!r}")
    _check_arguments(key_dim, value_dim, context_dim, torch_threads, switch_interval, restore, timeout,
                     local=address is None)
    dims = None
    if key_dim is not None:
        dims = {"key_dim": int(key_dim), "value_dim": int(value_dim), "context_dim": int(context_dim)}  # type: ignore[arg-type]
    ray = ensure_connected(address, **(ray_init_kwargs or {}))
    cpus = float(ray.cluster_resources().get("CPU", 0.0))
    if num_cpus > cpus:
        raise ValueError(f"num_cpus={num_cpus} is more than the Ray cluster has ({cpus:g} CPUs): the service would "
                         "wait for them for ever")
    if name is not None and _running(ray, name, namespace):
        raise ValueError(f"an actor named {name!r} already runs in Ray namespace {namespace!r}: connect({name!r}) "
                         "gives a handle on it (if it is a service), or shut it down or choose another name")
    name = name or f"experience-service-{uuid.uuid4().hex[:12]}"
    options: dict[str, Any] = {"name": name, "namespace": namespace, "num_cpus": num_cpus,
                               "max_restarts": max_restarts, "max_concurrency": 1}
    if detached:
        options["lifetime"] = "detached"
    actor = ray.remote(ServiceActor).options(**options).remote(
        requested, dims, None if restore is None else absolute_path(restore), torch_threads, switch_interval)
    service = ExperienceService(name, namespace=namespace, address=_cluster_address(ray, address),
                                timeout=timeout, actor=actor)
    try:
        status = service.wait(service.send("ping"), timeout=None if timeout is None else max(timeout, START_TIMEOUT))
    except (ServiceError, TimeoutError):
        ray.kill(actor, no_restart=True)  # (its name is free for the next try)
        raise
    OWNED[(namespace, name)] = actor
    if status["restored"] and (config is not None or bank_overrides or dims is not None):
        _say_restored_differences(service, requested, dims, restore)
    if restore is not None and not status["restored"]:  # (a mistyped path would start empty without a word)
        log.warning("restore=%r does not exist on the service's machine: the service starts with an empty bank "
                    "(it checkpoints there when saved)", str(restore))
    return service


def _running(ray: Any, name: str, namespace: str) -> bool:
    """Whether a live actor holds ``name`` in ``namespace`` (Ray would refuse the name with its own error)."""
    try:
        ray.get_actor(name, namespace=namespace)
    except ValueError:  # Ray's, when no actor has the name
        return False
    return True


def _say_restored_differences(service: ExperienceService, requested: BankConfig, dims: dict[str, int] | None,
                              restore: str | Path | None) -> None:
    """Warn where the bank restored from ``restore`` has another config or dims than the ones asked for."""
    differ = [f"{field}={getattr(service.config, field)!r} (asked {value!r})" for field, value in
              sorted(attrs.asdict(requested, recurse=False).items()) if getattr(service.config, field, value) != value]
    saved = service.dims
    if dims is not None and saved is not None:
        differ += [f"{k}={saved[k]} (asked {v})" for k, v in dims.items() if saved.get(k) != v]
    if differ:
        warnings.warn(f"the service restored its bank from {str(restore)!r}, whose own settings win: "
                      + ", ".join(differ), UserWarning, stacklevel=3)


def connect(name: str, *, address: str | None = "auto", namespace: str = DEFAULT_NAMESPACE,
            timeout: float | None = 60.0) -> ExperienceService:
    """A handle on a running service, found by name (``address="auto"``: the local cluster).

    Raises:
        ServiceError: no service of that name runs in ``namespace``, or no Ray cluster runs at ``address``.
    """
    service = ExperienceService(name, namespace=namespace, address=address, timeout=timeout)
    try:
        service.ping()
    except ConnectionError as exc:  # Ray's, when no cluster answers at the address
        raise ServiceError(f"no Ray cluster to find the experience service {name!r} at address={address!r}: "
                           f"start one (ray start --head, or start_service in this process) ({exc})") from exc
    service.address = _cluster_address(require_ray(), address)  # what pickled copies will join
    return service
