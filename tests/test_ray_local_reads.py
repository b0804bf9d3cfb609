"""Local reads on a real local Ray (``num_cpus=2``): a worker's retrievals query a replica of the
service's bank in its own process (``RemoteManager(local_reads=True)``), refreshed at ``poll()``.

One Ray instance for the module; every test starts its own service (a named actor).
"""

from __future__ import annotations

import time

import gymnasium as gym
import numpy as np
import pytest

ray = pytest.importorskip("ray")

from experience_wrappers.bank import BankReplica  # noqa: E402
from integrations.ray import ExperienceService, RemoteManager, connect, start_service  # noqa: E402
from tests.ray_support import local_ray  # noqa: E402

N_ENVS = 2


@pytest.fixture(scope="module", autouse=True)
def ray_local():
    yield from local_ray("crl-local-reads")


def _service() -> ExperienceService:
    return start_service(capacity=2_000, num_cpus=0, M=8, ef_construction=32, seed=0)


def _vec_env(service: ExperienceService, **kwargs):
    from stable_baselines3.common.env_util import make_vec_env

    return service.vec_env(make_vec_env("CartPole-v1", n_envs=N_ENVS, seed=0), query_mode="knn", seed=0, **kwargs)


def _add(service: ExperienceService, manager: RemoteManager, keys: np.ndarray) -> np.ndarray:
    """Entries at ``keys`` (task 0) with the learner's value width; returns their ids."""
    n = len(keys)
    values = np.random.default_rng(len(keys)).standard_normal((n, manager.exp_dim)).astype(np.float32)
    return service.add(keys, values, task_ids=0).ids


def _counts(service: ExperienceService, ids: np.ndarray) -> dict[int, int]:
    """The service's retrieval count of each entry."""
    return dict(zip(ids.tolist(), service.get(ids)["n_retrieved"].tolist(), strict=True))


def _copies(service: ExperienceService) -> int:
    return int(service.ping()["replicas_made"])


@pytest.mark.timeout(120)
def test_a_retrieval_reads_the_replica_and_answers_as_the_bank_did_at_its_version():
    service = _service()
    venv = _vec_env(service)
    manager = venv.manager
    retriever = venv.injector.retriever
    assert manager.local_reads and retriever.reader is manager.replicas.current
    obs = venv.reset()["observation"]
    task_ids = np.zeros(N_ENVS, np.int64)
    keys = manager.encode_keys(obs, task_ids)
    rng = np.random.default_rng(1)
    _add(service, manager, keys[:1] + rng.normal(0, 0.5, (50, keys.shape[1])).astype(np.float32))
    manager.poll()
    replica = manager.replicas.current
    assert isinstance(replica, BankReplica) and replica.version == service.version and len(replica) == len(service) > 0
    at_copy = service.query(keys, 4, task_ids=task_ids, mode="knn", record=False)
    near = _add(service, manager, keys)  # the queries' own keys: the bank's answer changes, the replica's does not
    local = retriever.query(obs, task_ids, record=False)
    for field in ("ids", "values", "utility", "mask"):
        np.testing.assert_array_equal(getattr(local, field), getattr(at_copy, field))
    np.testing.assert_allclose(local.distances, at_copy.distances, rtol=1e-5, atol=1e-5)
    now = service.query(keys, 1, task_ids=task_ids, mode="knn", record=False)
    assert set(now.ids[:, 0].tolist()) == set(near.tolist())
    assert manager.stats()["replica_lag"] == 1.0  # one add behind
    manager.poll()
    assert retriever.reader is manager.replicas.current  # the retriever reads the holder's current copy
    assert set(retriever.query(obs, task_ids, record=False).ids[:, 0].tolist()) == set(near.tolist())
    assert manager.stats()["replica_lag"] == 0.0
    service.shutdown()


@pytest.mark.timeout(120)
def test_the_replica_refreshes_at_poll_only_when_the_version_changed_and_workers_share_a_copy():
    service = _service()
    space = gym.spaces.Box(-1, 1, (4,), np.float32)
    manager = service.manager(space, gym.spaces.Discrete(2))
    made = _copies(service)  # the stand-in's first replica
    assert manager.replicas.swaps == 0 and manager.replica_checks == 0
    manager.poll()
    manager.poll()
    assert manager.replica_checks == 2 and manager.replicas.swaps == 0 and _copies(service) == made
    keys = np.random.default_rng(0).standard_normal((8, manager.key_encoder.key_dim)).astype(np.float32)
    _add(service, manager, keys)
    manager.poll()
    assert manager.replicas.swaps == 1 and _copies(service) == made + 1
    assert manager.replicas.current.version == service.version
    # another handle's stand-in (another worker) asking for the same version gets the same copy
    other = connect(service.name, address=None).manager(space, gym.spaces.Discrete(2))
    assert other.replicas.current.version == service.version and _copies(service) == made + 1
    manager.poll()
    assert manager.replicas.swaps == 1  # nothing changed
    # local_reads=False: every retrieval goes to the service; a handle keeps one setting
    remote = connect(service.name, address=None).manager(space, gym.spaces.Discrete(2), local_reads=False)
    assert remote.replicas is None and not remote.local_reads and "replica_lag" not in remote.stats()
    with pytest.raises(ValueError, match="local_reads=True"):
        remote.service.manager(space, gym.spaces.Discrete(2), local_reads=True)
    service.shutdown()


@pytest.mark.timeout(120)
def test_where_nothing_polls_an_episode_start_refreshes_a_replica_older_than_its_ttl():
    service = _service()
    env = service.wrap(gym.make("CartPole-v1"), query_mode="knn", seed=0)
    manager = env.manager
    manager.replica_ttl = 3.0  # long enough that a loaded machine's reset and add stay inside it
    env.reset(seed=0)
    keys = np.random.default_rng(0).standard_normal((8, manager.key_encoder.key_dim)).astype(np.float32)
    _add(service, manager, keys)
    env.reset()
    assert manager.replicas.swaps == 0  # not due yet
    time.sleep(3.05)
    env.reset()  # the wrapper reads the guided ratio at each episode start: the refresh is due
    assert manager.replicas.swaps == 1 and manager.replicas.current.version == service.version
    with pytest.raises(ValueError, match="replica_ttl must be None or a finite number > 0, got 0"):
        RemoteManager(service, service.call("attach", manager.observation_space, manager.action_space), replica_ttl=0)
    service.shutdown()


@pytest.mark.timeout(120)
def test_versions_only_grow_across_a_load_so_a_replica_of_the_old_bank_refreshes(tmp_path):
    service = _service()
    keys = np.random.default_rng(0).standard_normal((8, 16)).astype(np.float32)
    service.add(keys, np.ones((8, 2), np.float32))
    service.save(tmp_path / "bank")
    service.add(-keys, np.zeros((8, 2), np.float32))
    before = service.replica()
    assert before.version == service.version == 2 and len(before) == 16
    service.load(tmp_path / "bank")  # a bank at version 1
    assert service.version == 3
    after = service.replica_since(before.version)
    assert after is not None and after.version == 3 and len(after) == 8
    assert service.replica_since(3) is None
    with pytest.raises(TypeError, match="version must be an int"):
        service.replica_since(None)  # type: ignore[arg-type]
    service.shutdown()


@pytest.mark.timeout(120)
def test_retrievals_on_the_replica_are_counted_in_the_service_bank_after_a_refresh():
    service = _service()
    space = gym.spaces.Box(-1, 1, (4,), np.float32)
    manager = service.manager(space, gym.spaces.Discrete(2))
    keys = np.random.default_rng(0).standard_normal((20, manager.key_encoder.key_dim)).astype(np.float32)
    ids = _add(service, manager, keys)
    manager.poll()
    picked = [int(manager.replicas.current.query(keys[i], 1, mode="knn").ids[0, 0]) for i in (0, 0, 3)]
    assert picked == [int(ids[0]), int(ids[0]), int(ids[3])]
    counts = _counts(service, ids)
    assert counts[int(ids[0])] == 0  # not yet: they go back at the next refresh
    manager.poll()
    counts = _counts(service, ids)  # sent before this call, from this process: counted first
    assert counts[int(ids[0])] == 2 and counts[int(ids[3])] == 1 and sum(counts.values()) == 3
    assert manager.replicas.swaps == 1  # counts are not changes: the replica (which counted them too) stays
    manager.poll()
    assert sum(_counts(service, ids).values()) == 3  # sent once
    service.shutdown()


@ray.remote(num_cpus=0)
class _Learner:
    """A PPO + CRL learner in a process of its own, on the service's bank and learner."""

    def learn(self, service: ExperienceService) -> dict:
        import torch
        from stable_baselines3 import PPO
        from stable_baselines3.common.env_util import make_vec_env
        from stable_baselines3.common.logger import KVWriter, Logger

        from integrations.sb3 import CRLCallback

        class Keys(KVWriter):
            """An SB3 logger output that keeps what it is given (what the callback logged)."""

            def __init__(self) -> None:
                self.keys: dict[str, float] = {}

            def write(self, key_values, key_excluded, step=0) -> None:
                self.keys.update({k: v for k, v in key_values.items() if isinstance(v, (int, float))})

        torch.set_num_threads(1)
        venv = service.vec_env(make_vec_env("CartPole-v1", n_envs=N_ENVS, seed=0), seed=0)
        manager = venv.manager
        model = PPO("MultiInputPolicy", venv, n_steps=32, batch_size=64, n_epochs=1, seed=0, device="cpu")
        out = Keys()
        model.set_logger(Logger(None, [out]))
        model.learn(320, callback=CRLCallback())
        return {"local_reads": manager.local_reads, "reader": type(venv.injector.retriever.reader).__name__,
                "checks": manager.replica_checks, "swaps": manager.replicas.swaps,
                "version": manager.replicas.current.version, "logged": out.keys, "stats": manager.stats()}


@pytest.mark.timeout(240)
def test_a_worker_in_another_process_reads_locally_and_logs_the_lag():
    service = _service()
    out = ray.get(_Learner.remote().learn.remote(service), timeout=200)
    assert out["local_reads"] and out["reader"] == "BankReplica"
    assert out["checks"] >= 320 // (32 * N_ENVS)  # a poll per rollout (and one at the end)
    assert out["swaps"] >= 1 and 0 < out["version"] <= service.version
    assert {"bank/lag", "bank/replica_lag"} <= set(out["logged"])
    assert out["stats"]["learner_backlog"] >= 0 and out["stats"]["bank_version"] >= out["version"]
    entries = service.entries()
    assert len(entries["id"]) > 0 and entries["n_retrieved"].sum() > 0  # its retrievals were counted here
    service.shutdown()
