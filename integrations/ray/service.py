"""The client side of the experience service: a picklable handle (:func:`~.start.start_service` and
:func:`~.start.connect` make one)."""

from __future__ import annotations

import os
import pickle
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from experience_wrappers import BankConfig, KeyEncoder
from experience_wrappers.bank import BankReplica
from experience_wrappers.bank.results import AddResult, MergeResult, QueryResult
from experience_wrappers.manager import Episode
from experience_wrappers.manager.sharing import serves

from ._require import ensure_connected, require_ray
from .errors import ServiceError

if TYPE_CHECKING:
    import gymnasium as gym
    from gymnasium import spaces

    from .remote import RemoteManager
    from .remote_bank import RemoteBank
    from .service_wrappers import ServiceExperienceWrapper

__all__ = ["ExperienceService", "ServiceError", "DEFAULT_NAMESPACE", "OWNED", "absolute_path"]

DEFAULT_NAMESPACE = "complementary-rl"
#: the Ray handles of the services this process started, by (namespace, name): a named actor that is
#: not detached dies with the last handle of its creator (Ray's reference counting), so the handle is
#: kept here until :meth:`ExperienceService.shutdown`, whatever the user's variables hold
OWNED: dict[tuple[str, str], Any] = {}
#: seconds :meth:`ExperienceService.shutdown` waits for Ray to free the service's name
SHUTDOWN_WAIT = 10.0
#: seconds a handle reuses the bank's config and dims it read (another handle may replace the bank)
DESCRIBE_TTL = 1.0


class ExperienceService:
    """A picklable handle on an experience service (a named Ray actor).

    The handle has the bank's batched API (:meth:`add`, :meth:`query`, :meth:`update`,
    ``len()``, :meth:`stats`, :meth:`save` / :meth:`load`, ...), episode submission through
    :meth:`manager`, and builds the usual wrappers around it (:meth:`wrap`,
    :meth:`vec_env`). Every method blocks until the service answers (or ``timeout``
    seconds pass: :class:`TimeoutError`); errors raised in the service come back with
    their own type (a bad shape is still a ValueError).

    Pickling a handle carries the service's name, namespace and cluster address only:
    the copy finds the actor on first use, and connects its process to the cluster first
    if it is not connected (a ``SubprocVecEnv`` worker is not; a Ray task or actor is).
    Start subprocesses with ``spawn`` or ``forkserver`` (SB3's default), not ``fork``.

    Paths given to :meth:`save`, :meth:`load`, :meth:`save_state` and
    :meth:`restore_state` are on the service's machine; relative ones are resolved
    against the caller's working directory first.

    Use :func:`start_service` or :func:`connect` to get one.
    """

    def __init__(self, name: str, *, namespace: str = DEFAULT_NAMESPACE, address: str | None = None,
                 timeout: float | None = 60.0, actor: Any = None) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"name must be a non-empty str, got {name!r}")
        if timeout is not None and not (np.isfinite(timeout) and timeout > 0):
            raise ValueError(f"timeout must be None or a finite number > 0, got {timeout!r}")
        self.name = name
        self.namespace = namespace
        self.address = address
        self.timeout = timeout
        self._actor = actor
        self._pid = os.getpid()
        self._description: dict[str, Any] | None = None
        self._described_at = 0.0
        self._bank: RemoteBank | None = None
        self._manager: RemoteManager | None = None
        self._shut_down = False

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return (_reconnect, (self.name, self.namespace, self.address, self.timeout))

    def __repr__(self) -> str:
        return f"ExperienceService(name={self.name!r}, namespace={self.namespace!r}, address={self.address!r})"

    # ------------------------------------------------------------- plumbing
    @property
    def actor(self) -> Any:
        """The Ray actor handle (found by name, connecting this process to Ray if needed)."""
        ray = require_ray()
        if self._pid != os.getpid() and ray.is_initialized() and self._actor is not None:
            raise ServiceError(f"the handle on the experience service {self.name!r} is used in a process forked from "
                               "one connected to Ray, whose connection it cannot use: start subprocesses with "
                               "'spawn' or 'forkserver' (SB3's SubprocVecEnv default), or pickle the handle over")
        self._check_ray_up(ray)
        if self._actor is None or self._pid != os.getpid():
            ray = ensure_connected(self.address, namespace=self.namespace)
            try:
                self._actor = ray.get_actor(self.name, namespace=self.namespace)
            except ValueError as exc:
                raise ServiceError(f"no experience service named {self.name!r} in namespace "
                                   f"{self.namespace!r} on the Ray cluster at {self.address!r}: start one "
                                   "with integrations.ray.start_service(name=...)") from exc
            self._pid = os.getpid()
        return self._actor

    @property
    def shut_down(self) -> bool:
        """Whether :meth:`shutdown` was called on this handle (a pickled copy does not know)."""
        return self._shut_down

    def _check_ray_up(self, ray: Any) -> None:
        """Refuse a handle that was connected once, after ``ray.shutdown()`` in this process (``ray.get`` would
        start a new local cluster, which runs no service), or whose service it shut down."""
        if self._shut_down:
            raise ServiceError(f"the experience service {self.name!r} was shut down (service.shutdown()): start a "
                               "new one (start_service) and wrap new envs on it")
        if self._actor is not None and not ray.is_initialized():
            raise ServiceError(f"Ray was shut down in this process (ray.shutdown()): the experience service "
                               f"{self.name!r} went with its cluster unless it was detached on another; start a new "
                               "one (start_service) or connect(name, address=...) to the cluster that runs it")

    def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """Call a :class:`ServiceActor` method and wait for its answer."""
        return self.wait(self.send(method, *args, **kwargs))

    def send(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """Call a :class:`ServiceActor` method without waiting; returns the Ray ObjectRef."""
        try:
            return getattr(self.actor, method).remote(*args, **kwargs)
        except AttributeError as exc:
            raise AttributeError(f"the experience service has no method {method!r}") from exc

    def wait(self, ref: Any, timeout: float | None | str = "default") -> Any:
        """The value of an ObjectRef from :meth:`send` (a list of refs gives a list of values)."""
        ray = require_ray()
        self._check_ray_up(ray)
        limit = self.timeout if timeout == "default" else timeout
        try:
            return ray.get(ref, timeout=limit)
        except ray.exceptions.GetTimeoutError as exc:
            raise TimeoutError(f"the experience service {self.name!r} did not answer within {limit} s") from exc
        except ray.exceptions.RayTaskError as exc:  # raised inside the service: its own type and message
            cause = getattr(exc, "cause", None)
            if isinstance(cause, Exception):
                raise cause from exc
            raise
        except ray.exceptions.RayActorError as exc:
            if getattr(exc, "actor_init_failed", False):
                raise ServiceError(f"the experience service {self.name!r} failed to start: "
                                   f"{_raised_in(str(exc))}") from exc
            raise ServiceError(f"the experience service {self.name!r} is gone or restarting "
                               f"({type(exc).__name__}): {exc}") from exc

    def _describe(self) -> dict[str, Any]:
        # read again after DESCRIBE_TTL seconds: another handle's load() or restore_state() replaces the bank
        if self._description is None or self._description["dims"] is None or \
                time.monotonic() - self._described_at >= DESCRIBE_TTL:
            self._description = self.call("describe")
            self._described_at = time.monotonic()
        return self._description

    # ------------------------------------------------------------ bank API
    @property
    def config(self) -> BankConfig:
        """The bank's :class:`BankConfig`."""
        return self._describe()["config"]

    @property
    def dims(self) -> dict[str, int] | None:
        """The bank's dims (None before its first add)."""
        return self._describe()["dims"]

    def add(self, keys: Any, values: Any, **kwargs: Any) -> AddResult:
        """:meth:`ExperienceBank.add <experience_wrappers.ExperienceBank.add>` on the service's bank."""
        return self.call("add", keys, values, **kwargs)

    def query(self, keys: Any, k: int = 4, *, rng: np.random.Generator | None = None,
              **kwargs: Any) -> QueryResult:
        """:meth:`ExperienceBank.query <experience_wrappers.ExperienceBank.query>` on the service's bank.

        ``rng`` is accepted for compatibility and ignored: the service samples with its bank's
        own generator (a generator sent along would be a copy whose state never comes back).
        """
        return self.call("query", keys, k, **kwargs)

    def update(self, ids: Any, deltas: Any, decay: float) -> np.ndarray:
        """Credit entries (:meth:`ExperienceBank.update <experience_wrappers.ExperienceBank.update>`)."""
        return self.call("update", ids, deltas, decay)

    def get(self, ids: Any) -> dict[str, np.ndarray]:
        """Copies of every field of the given entries."""
        return self.call("get", ids)

    def entries(self) -> dict[str, np.ndarray]:
        """Copies of every column of the bank, one row per entry."""
        return self.call("entries")

    def stats(self) -> dict[str, float]:
        """The bank's :meth:`~experience_wrappers.ExperienceBank.stats`."""
        return self.call("stats")

    def __len__(self) -> int:
        return int(self.call("len"))

    def __contains__(self, entry_id: object) -> bool:
        return isinstance(entry_id, (int, np.integer)) and bool(self.call("contains", int(entry_id)))

    def merge(self, threshold: float | None = None) -> MergeResult:
        return self.call("merge", threshold)

    def evict(self, n: int) -> np.ndarray:
        return self.call("evict", n)

    def remove(self, ids: Any) -> int:
        return self.call("remove", ids)

    def save(self, path: str | Path, *, overwrite: bool = False) -> Path:
        """Save the bank to a folder on the service's machine (``ExperienceBank.load`` reads it),
        after the episodes this handle's wrappers hold are processed (:meth:`_hand_over`);
        ``overwrite`` as :meth:`ExperienceBank.save <experience_wrappers.ExperienceBank.save>`."""
        self._hand_over()
        return Path(self.call("save", absolute_path(path), overwrite))

    def _hand_over(self) -> None:
        """Send the episodes still queued on this handle's learner stand-in and wait (within the handle's
        timeout) until the learner has processed them (a save or a shutdown would miss them otherwise)."""
        if self._manager is not None:
            self._manager.flush(self.timeout)

    def load(self, path: str | Path) -> int:
        """Replace the service's bank with the one saved at ``path``; returns its size."""
        n = int(self.call("load", absolute_path(path)))
        self._description = None
        return n

    def ping(self) -> dict[str, Any]:
        """Pid, host and bank size of the service (raises :class:`ServiceError` when it is gone)."""
        return self.call("ping")

    # ------------------------------------------------------------ replicas
    @property
    def version(self) -> int:
        """The bank's version: how many changes it has committed (it only grows, also across
        :meth:`load` and :meth:`restore_state`)."""
        return int(self.call("version"))

    def replica(self) -> BankReplica:
        """A read replica of the service's bank, queried in this process (no call per query)."""
        replica = self.replica_since(-1)
        assert replica is not None  # no bank is at version -1
        return replica

    def replica_since(self, version: int) -> BankReplica | None:
        """A read replica of the bank if its version is not ``version`` any more, else None."""
        blob = self.call("replica_since", version)
        return None if blob is None else pickle.loads(blob)  # the service's own pickle of its replica

    def record_retrievals(self, ids: Any) -> int:
        """Count retrievals made on a replica (``replica.take_hits()``) in the service's bank."""
        return int(self.call("record_retrievals", ids))

    # -------------------------------------------------------------- learner
    def manager(self, observation_space: spaces.Space, action_space: spaces.Space,
                key_encoder: KeyEncoder | None = None, *, local_reads: bool | None = None,
                **manager_kwargs: Any) -> RemoteManager:
        """The service's learner for these spaces, as a local stand-in for an ExperienceManager.

        The first call creates the learner in the service (``mode="async"`` unless
        ``manager_kwargs`` say otherwise); later calls, from any process, must give spaces of
        the same layout and return a stand-in for the same learner.

        ``local_reads``: the stand-in's retrievals read a replica of the bank held in this
        process, refreshed at each ``poll()`` (see :class:`RemoteManager`); False sends every
        retrieval to the service; None: on for a new stand-in, else the existing one's setting
        (a different one raises ValueError: the wrappers built on it read what it reads).
        """
        from .remote import RemoteManager

        if local_reads is not None and not isinstance(local_reads, bool):
            raise TypeError(f"local_reads must be a bool or None, got {local_reads!r}")
        held = self._manager
        if held is not None and not serves(held, observation_space, action_space):
            # (checked here too: a restarted service has no learner yet to check them against)
            raise ValueError(f"this handle's learner stand-in serves observation {held.observation_space}, action "
                             f"{held.action_space}; got spaces of another layout: observation {observation_space}, "
                             f"action {action_space} (give the env's own spaces, below its experience wrapper: "
                             "env.unwrapped's)")
        # the service creates the learner, or checks these spaces and kwargs against it (ValueError)
        info = self.call("attach", observation_space, action_space, key_encoder, manager_kwargs)
        if self._manager is None:  # one stand-in per handle: every wrapper here shares it
            self._manager = RemoteManager(self, info, local_reads=True if local_reads is None else local_reads)
        elif local_reads is not None and local_reads != self._manager.local_reads:
            raise ValueError(f"local_reads={local_reads!r}, but this handle's learner stand-in was made with "
                             f"local_reads={self._manager.local_reads!r} (its wrappers read what it reads); "
                             "use another handle (connect(name)) for the other setting")
        return self._manager

    def submit(self, episodes: Episode | list[Episode]) -> int:
        """Hand finished episodes to the service's learner and wait until they are queued there."""
        batch = [episodes] if isinstance(episodes, Episode) else list(episodes)
        return int(self.call("submit", batch))

    def flush(self, timeout: float | None = None) -> None:
        """Wait until the learner has processed every episode it received (``timeout``: seconds, None: as long as it takes)."""
        self.wait(self.send("flush", timeout), timeout=timeout)

    def save_state(self, path: str | Path) -> Path:
        """Save the bank, the extractor and the schedules (the learner's folder format), after the
        episodes this handle's wrappers hold are processed."""
        self._hand_over()
        return Path(self.call("save_state", absolute_path(path)))

    def restore_state(self, path: str | Path) -> int:
        """Restore what :meth:`save_state` wrote; returns the bank's size."""
        n = int(self.call("restore_state", absolute_path(path)))
        self._description = None
        return n

    # ------------------------------------------------------------ wrappers
    @property
    def bank(self) -> RemoteBank:
        """An :class:`~experience_wrappers.ExperienceBank` whose calls go to the service."""
        from .remote_bank import RemoteBank

        if self._bank is None:
            self._bank = RemoteBank(self)
        return self._bank

    def wrap(self, env: gym.Env, *, key_encoder: KeyEncoder | None = None, local_reads: bool | None = None,
             manager_kwargs: dict[str, Any] | None = None, **wrapper_kwargs: Any) -> ServiceExperienceWrapper:
        """``ExperienceWrapper(env, ...)`` on the service's bank and learner (for any process);
        ``local_reads`` as in :meth:`manager`.

        Its ``close()`` sends the episodes still in flight and waits until the service has
        them, so a ``SubprocVecEnv`` worker loses nothing when it exits.
        """
        from .service_wrappers import ServiceExperienceWrapper

        manager = self.manager(env.observation_space, env.action_space, key_encoder, local_reads=local_reads,
                               **(manager_kwargs or {}))
        return ServiceExperienceWrapper(env, self.bank, manager=manager, **wrapper_kwargs)

    def vec_env(self, venv: Any, *, key_encoder: KeyEncoder | None = None, local_reads: bool | None = None,
                manager_kwargs: dict[str, Any] | None = None, **wrapper_kwargs: Any) -> Any:
        """``integrations.sb3.ExperienceVecEnv(venv, ...)`` on the service: one query per vector step;
        ``local_reads`` as in :meth:`manager`."""
        from .service_wrappers import service_vec_env

        manager = self.manager(venv.observation_space, venv.action_space, key_encoder, local_reads=local_reads,
                               **(manager_kwargs or {}))
        return service_vec_env(venv, self.bank, manager, **wrapper_kwargs)

    def shutdown(self) -> None:
        """Stop the service (the episodes this handle holds are sent and its learner's queue is
        processed first; unsaved contents are lost) and return once Ray has let its name go."""
        ray = require_ray()
        try:
            self._hand_over()
            self.call("close")
        except ServiceError:
            pass
        ray.kill(self.actor, no_restart=True)
        self._shut_down = True
        OWNED.pop((self.namespace, self.name), None)
        deadline = time.monotonic() + SHUTDOWN_WAIT
        while time.monotonic() < deadline:  # ray.kill returns at once; the name is freed when the actor is gone
            try:
                ray.get_actor(self.name, namespace=self.namespace)
            except ValueError:
                return
            time.sleep(0.05)


def _reconnect(name: str, namespace: str, address: str | None, timeout: float | None) -> ExperienceService:
    return ExperienceService(name, namespace=namespace, address=address, timeout=timeout)


def absolute_path(path: str | Path) -> str:
    """``path`` as the service's machine reads it: absolute, resolved against this process's working directory."""
    return str(Path(path).expanduser().absolute())


def _raised_in(message: str) -> str:
    """The last ``SomeError: message`` line of a Ray traceback (the service's own error), else the message.

    >>> _raised_in("Traceback (most recent call last):" + chr(10) + "ValueError: key_dim must be >= 1, got 0")
    'ValueError: key_dim must be >= 1, got 0'
    >>> _raised_in("ray::ServiceActor.__init__()" + chr(10) + "experience_wrappers.errors.BankFileError: damaged")
    'experience_wrappers.errors.BankFileError: damaged'
    """
    found = re.findall(r"^((?:\w+\.)*\w+(?:Error|Exception)\b.*)$", message, flags=re.MULTILINE)
    return found[-1] if found else message
