"""The experience service on Ray: one bank and its learner shared by many workers, learners and machines.

Needs the ``[ray]`` extra (``pip install 'complementary-rl[ray]'``, Ray core only). Nothing
else in the library imports this package; the in-process bank stays the default.

>>> from integrations.ray import start_service          # doctest: +SKIP
>>> service = start_service(capacity=100_000)           # doctest: +SKIP
>>> venv = service.vec_env(make_vec_env("CartPole-v1", n_envs=8, vec_env_cls=SubprocVecEnv))  # doctest: +SKIP

See ``docs/scaling.md``.
"""

from ._require import RAY_EXTRA_HINT, ensure_connected, require_ray
from .actor import ServiceActor
from .remote import RemoteManager
from .remote_bank import RemoteBank
from .service import DEFAULT_NAMESPACE, ExperienceService, ServiceError
from .start import connect, start_service

__all__ = [
    "ExperienceService",
    "ServiceActor",
    "ServiceError",
    "RemoteBank",
    "RemoteManager",
    "start_service",
    "connect",
    "require_ray",
    "ensure_connected",
    "RAY_EXTRA_HINT",
    "DEFAULT_NAMESPACE",
]
