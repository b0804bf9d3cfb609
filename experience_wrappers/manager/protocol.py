"""What a wrapper and the SB3 callback need of a manager: the :class:`ExperienceSource` protocol.

Two classes serve it:

* :class:`~experience_wrappers.ExperienceManager`, the manager of a bank in this process;
* :class:`~integrations.ray.RemoteManager`, the stand-in for an experience service's manager
  (keys encoded here, episodes sent to the service).

Who uses what:

* the wrappers (:class:`~experience_wrappers.ExperienceWrapper`,
  :class:`~integrations.sb3.ExperienceVecEnv`, through :class:`~experience_wrappers.wrappers.ExperienceInjector`
  and :meth:`Retriever.for_manager <experience_wrappers.wrappers.retrieval.Retriever.for_manager>`):
  ``bank``, ``reader``, ``key_encoder``, ``exp_dim``, ``guided_ratio``, ``training_injectors``,
  ``submit``;
* :class:`~integrations.sb3.CRLCallback` and its helpers (``discovery``, ``guards``, ``lifecycle``):
  ``schedule``, ``bank``, ``replay``, ``learn_claim``, ``training_injectors``, ``free_baseline``,
  ``poll``, ``request_merge``, ``stats``, ``flush``;
* :func:`~integrations.sb3.save_crl`, :func:`~integrations.sb3.load_crl` and
  :class:`~integrations.sb3.CRLCheckpointCallback`: ``save``, ``restore``, ``replay``;
* :class:`~experience_wrappers.rollin.BankGuide` (roll-in): ``bank``, ``key_encoder``, ``encode_keys``,
  ``action_space``, ``observation_space``; ``CRLMethod.close``: ``close``.

What only a manager of this process has (``learner``, ``ingest``, ``extractor_version``,
``episodes_processed``, ...) is not here: code that needs it checks for an
:class:`~experience_wrappers.ExperienceManager` (``ExperienceWrapper``'s worker check,
:func:`~experience_wrappers.health.degeneracy`'s ``hasattr``) or takes one
(:func:`~integrations.demos.ingest_demonstrations`).

The protocol is runtime-checkable: ``isinstance(x, ExperienceSource)`` says that every member
is there (not that its type is right; before Python 3.12 it reads the properties to say so).
"""

from __future__ import annotations

import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
from gymnasium import spaces

if TYPE_CHECKING:
    from ..bank import BankReplica, ExperienceBank
    from ..keys import KeyEncoder
    from ..replay import SuccessReplay
    from ..schedule import Schedule
    from .episode import Episode, SuccessReports

__all__ = ["ExperienceSource"]


@runtime_checkable
class ExperienceSource(Protocol):
    """A manager as the wrappers and the callback see it (see the module doc).

    Read-only members are properties, so that a plain attribute and a property both serve;
    ``replay``, ``training_injectors`` and ``learn_claim`` are set from outside; ``success_reports`` is
    one object that the wrappers on the manager share.
    """

    #: whether the envs of its wrappers report success: one reading, shared by every wrapper on it (once any
    #: episode reported success, an episode that ends without the key is a failure; saved with the manager)
    success_reports: SuccessReports

    #: the successful-state replay that self-imitation learns from (set by CRLCallback, saved by save_crl)
    replay: SuccessReplay | None
    #: the injectors of the env being trained (set by ``wrappers.injector.mark_training``); None: all learn
    training_injectors: weakref.WeakSet[Any] | None
    #: the ``learn`` call a CRLCallback trains in, and that callback (see ``integrations.sb3.guards``)
    learn_claim: tuple[Any, Any] | None

    @property
    def bank(self) -> ExperienceBank:
        """The bank the wrappers retrieve from (a ``RemoteBank`` for a service)."""

    @property
    def reader(self) -> ExperienceBank | BankReplica:
        """What the wrappers' retrievals query now: the bank, or a copy of it read without locks (an
        experience service's local reads); read once per retrieval."""

    @property
    def key_encoder(self) -> KeyEncoder:
        """The frozen key encoder of the (unwrapped) observations."""

    @property
    def observation_space(self) -> spaces.Space:
        """The (unwrapped) observation space the manager was built for."""

    @property
    def action_space(self) -> spaces.Space:
        """The action space the manager was built for."""

    @property
    def exp_dim(self) -> int:
        """Size of an entry's experience vector."""

    @property
    def schedule(self) -> Schedule:
        """The schedules (guided ratio, progress, rollouts) that CRLCallback advances."""

    @property
    def guided_ratio(self) -> float:
        """Share of episodes drawn guided now (read at every episode start)."""

    @property
    def episodes_submitted(self) -> int:
        """Episodes handed over through this object (CRLCallback's check for a model loaded without its bank)."""

    def encode_keys(self, observations: Any, task_ids: np.ndarray) -> np.ndarray:
        """Keys of a batch of observations: ``(n, key_dim)`` finite float32 rows."""

    def submit(self, episode: Episode) -> None:
        """Hand a finished episode over to the learner."""

    def poll(self) -> None:
        """Hand over what waits and apply what the learner has produced, never waiting (each rollout's end)."""

    def request_merge(self) -> None:
        """Merge the bank's near duplicates (after the episodes handed over before)."""

    def flush(self, timeout: float | None = None) -> None:
        """Wait until everything handed over is processed."""

    def close(self) -> None:
        """Process what is queued, then stop."""

    def stats(self) -> dict[str, float]:
        """The learner's figures for the logs (``extractor_updates``, ``queue``, ``busy_seconds``, ...)."""

    def free_baseline(self, task_id: int = 0) -> float | None:
        """The mean outcome of the task's recent free episodes (None: none yet)."""

    def save(self, path: str | Path) -> Path:
        """Save the bank, extractor and schedules into a folder (on the service's machine for a service)."""

    def restore(self, path: str | Path) -> None:
        """Replace the bank's content, extractor and schedules with a saved folder's."""
