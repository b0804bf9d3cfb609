"""The experience service on a real local Ray (``num_cpus=2``): API, concurrency, failures, SB3.

One Ray instance for the module; every test starts its own service (a named actor).
Writers are Ray tasks, so they run in other processes, at the same time.
"""

from __future__ import annotations

import multiprocessing
import pickle
import time

import gymnasium as gym
import numpy as np
import pytest

ray = pytest.importorskip("ray")

from experience_wrappers import ExperienceBank  # noqa: E402
from integrations.ray import (  # noqa: E402
    ExperienceService,
    RemoteBank,
    ServiceError,
    connect,
    start_service,
)
from tests.ray_support import local_ray  # noqa: E402

KEY_DIM, VALUE_DIM = 32, 4
WRITERS, PER_WRITER, BATCH = 4, 2000, 100
SHARED = 50
OWN_DECAY, SHARED_DECAY = 0.5, 0.99


@pytest.fixture(scope="module", autouse=True)
def ray_local():
    yield from local_ray("crl-tests")


def _keys(seed: int, n: int) -> np.ndarray:
    """Well-separated keys (squared distances ~ 2 * KEY_DIM): no dedup between any two."""
    return np.random.default_rng(seed).standard_normal((n, KEY_DIM)).astype(np.float32)


def _service(**kwargs) -> ExperienceService:
    return start_service(capacity=20_000, num_cpus=0, M=8, ef_construction=32, **kwargs)  # cheap index: a test of counts


def _check_consistent(entries: dict[str, np.ndarray], base: int = 0) -> None:
    """Every entry is whole (its value is its key's first columns) and batches are whole."""
    np.testing.assert_array_equal(entries["value"], entries["key"][:, :VALUE_DIM])
    assert len(np.unique(entries["id"])) == len(entries["id"])
    assert (len(entries["id"]) - base) % BATCH == 0, "a batch is visible in part"


@ray.remote(num_cpus=0)
class _Worker:
    """A process of its own that writes, reads or learns against a service it is handed.

    The module starts its workers once: a new process pays for importing torch, SB3 and
    the library, which would otherwise dominate every test.
    """

    def ready(self) -> bool:
        import integrations.ray.remote  # noqa: F401  (the library and torch: paid once, here)

        return True

    def write(self, service: ExperienceService, seed: int, shared_ids: np.ndarray, pause: float = 0.0) -> dict:
        """Add PER_WRITER entries in batches; credit each new entry once, each shared entry per batch."""
        keys = _keys(seed, PER_WRITER)
        ids, credited = [], 0
        for lo in range(0, PER_WRITER, BATCH):
            batch = keys[lo:lo + BATCH]
            res = service.add(batch, batch[:, :VALUE_DIM], task_ids=0)
            assert res.added.all()
            ids.append(res.ids)
            credited += int(service.update(res.ids, np.ones(BATCH), OWN_DECAY).sum())
            if len(shared_ids):
                credited += int(service.update(shared_ids, np.ones(len(shared_ids)), SHARED_DECAY).sum())
            if pause:
                time.sleep(pause)
        return {"ids": np.concatenate(ids), "credited": credited}

    def read(self, service: ExperienceService, rounds: int) -> int:
        """Snapshot and query while writers run; every snapshot must be made of whole entries."""
        checked = 0
        for r in range(rounds):
            e = service.entries()
            if len(e):
                _check_consistent(e, base=SHARED)
                checked += len(e["id"])
            hit = service.query(_keys(10_000 + r, 8), 2, mode="knn")
            assert hit.ids.shape == (8, 2)
        return checked

    def write_forever(self, service: ExperienceService) -> None:
        seed = 500
        while True:
            keys = _keys(seed, BATCH)
            service.add(keys, keys[:, :VALUE_DIM])
            seed += 1

    def learn(self, service: ExperienceService, seed: int) -> int:
        """A small PPO + CRL run whose bank and learner are the service's."""
        import torch
        from stable_baselines3 import PPO
        from stable_baselines3.common.env_util import make_vec_env

        from integrations.sb3 import CRLCallback

        torch.set_num_threads(1)
        venv = service.vec_env(make_vec_env("CartPole-v1", n_envs=2, seed=seed), seed=seed)
        model = PPO("MultiInputPolicy", venv, n_steps=32, batch_size=64, n_epochs=1, seed=seed, device="cpu")
        model.learn(256, callback=CRLCallback())
        return venv.manager.episodes_sent


@pytest.fixture(scope="module")
def workers(ray_local) -> list:
    """WRITERS + 1 worker processes, started once (the last one, the reader, is killed by a test)."""
    pool = [_Worker.remote() for _ in range(WRITERS + 1)]
    assert all(ray.get([w.ready.remote() for w in pool], timeout=240))
    return pool


# --------------------------------------------------------------------------- API
@pytest.mark.timeout(120)
def test_batched_api_round_trip_pickle_and_errors(tmp_path):
    service = _service()
    keys = _keys(0, 10)
    res = service.add(keys, keys[:, :VALUE_DIM], task_ids=np.arange(10) % 2)
    assert res.ids.tolist() == list(range(10)) and len(service) == 10
    hit = service.query(keys[:3], 1, task_ids=[0, 1, 0], mode="knn")
    assert hit.ids[:, 0].tolist() == [0, 1, 2] and hit.mask.all()
    assert service.update([0, 0, 99], [1.0, 1.0, 1.0], 0.5).tolist() == [True, True, False]
    assert service.get([0])["n_credited"].tolist() == [2]
    assert service.stats()["size"] == 10.0 and 3 in service and 99 not in service
    assert service.dims == {"key_dim": KEY_DIM, "value_dim": VALUE_DIM, "context_dim": 0}

    with pytest.raises(ValueError, match="keys"):  # the bank's own error, with its own type
        service.add(np.ones((2, KEY_DIM + 1), np.float32), np.ones((2, VALUE_DIM), np.float32))
    with pytest.raises(ValueError, match="NaN"):
        service.query(np.full((1, KEY_DIM), np.nan), 1)

    copy = pickle.loads(pickle.dumps(service))  # carries the name and the address only
    assert copy is not service and len(copy) == 10
    assert len(connect(service.name)) == 10
    with pytest.raises(ServiceError, match="no experience service named 'nope'"):
        connect("nope")

    path = service.save(tmp_path / "bank")
    local = ExperienceBank.load(path)  # an ordinary bank folder
    np.testing.assert_array_equal(local.entries()["key"], service.entries()["key"])
    other = _service()
    assert other.load(path) == 10 and other.get([0])["n_credited"].tolist() == [2]

    bank = service.bank
    assert isinstance(bank, ExperienceBank) and isinstance(bank, RemoteBank) and len(bank) == 10
    assert pickle.loads(pickle.dumps(bank)).service.name == service.name
    with pytest.raises(TypeError, match="service.load"):
        RemoteBank.load(path)
    with pytest.raises(TypeError, match="BankConfig"):
        start_service(config={"capacity": 3})


def test_missing_ray_names_the_extra():
    from integrations.ray._require import RAY_EXTRA_HINT

    assert "complementary-rl[ray]" in RAY_EXTRA_HINT


# ------------------------------------------------------------------- consistency
@pytest.mark.timeout(160)
def test_concurrent_writers_exact_counts_and_every_credit_once(workers):
    service = _service()
    shared_keys = _keys(99, SHARED)
    shared = service.add(shared_keys, shared_keys[:, :VALUE_DIM]).ids
    jobs = [w.write.remote(service, seed, shared) for seed, w in enumerate(workers[:WRITERS])]
    reader = workers[WRITERS].read.remote(service, 10)
    out = ray.get(jobs, timeout=120)
    assert ray.get(reader, timeout=120) >= 0

    assert len(service) == SHARED + WRITERS * PER_WRITER  # exactly 8,000 new entries
    ids = np.concatenate([o["ids"] for o in out])
    assert len(np.unique(ids)) == WRITERS * PER_WRITER and not np.isin(ids, shared).any()
    batches = PER_WRITER // BATCH
    assert sum(o["credited"] for o in out) == WRITERS * PER_WRITER + WRITERS * batches * SHARED

    e = service.get(ids)
    assert (e["n_credited"] == 1).all()
    np.testing.assert_allclose(e["utility"], 1.0 - OWN_DECAY)  # from 0, one credit of 1.0
    s = service.get(shared)
    n = WRITERS * batches
    assert (s["n_credited"] == n).all()
    np.testing.assert_allclose(s["utility"], 1.0 - SHARED_DECAY ** n, rtol=1e-6)
    _check_consistent(service.entries(), base=SHARED)


@pytest.mark.timeout(160)
def test_save_while_writers_run_reloads_identical(tmp_path, workers):
    service = _service()
    jobs = [w.write.remote(service, seed, np.zeros(0, np.int64), 0.01) for seed, w in enumerate(workers[:WRITERS])]
    sizes = []
    while True:
        done, _ = ray.wait(jobs, num_returns=len(jobs), timeout=0)
        path = service.save(tmp_path / f"snap{len(sizes)}")
        snap = ExperienceBank.load(path).entries()
        sizes.append(len(snap["id"]) if snap else 0)
        if snap:
            _check_consistent(snap)
        if len(done) == len(jobs):
            break
    assert any(0 < s < WRITERS * PER_WRITER for s in sizes), f"no save landed mid-run: {sizes}"
    assert sizes[-1] == WRITERS * PER_WRITER

    final = service.save(tmp_path / "final")
    live = service.entries()
    for name, col in ExperienceBank.load(final).entries().items():
        np.testing.assert_array_equal(col, live[name], err_msg=name)
    fresh = _service()
    fresh.load(final)
    for name, col in fresh.entries().items():
        np.testing.assert_array_equal(col, live[name], err_msg=name)


@pytest.mark.timeout(120)
def test_killed_writer_leaves_the_service_answering(tmp_path, workers):
    service = _service()
    writer = workers.pop()  # its own process; killed below
    writer.write_forever.remote(service)
    deadline = time.monotonic() + 80
    while len(service) < 5 * BATCH and time.monotonic() < deadline:
        time.sleep(0.05)
    ray.kill(writer)
    with pytest.raises(ray.exceptions.RayActorError):
        ray.get(writer.ready.remote(), timeout=40)
    time.sleep(0.3)  # a call the writer sent before it died may still be queued at the service
    n = len(service)
    assert n >= 5 * BATCH and n % BATCH == 0  # the killed writer's last batch is whole or absent
    time.sleep(0.3)
    assert len(service) == n  # and nothing more arrives
    hit = service.query(_keys(500, 4), 1, mode="knn")
    assert hit.mask.all()
    keys = _keys(7, BATCH)
    assert service.add(keys, keys[:, :VALUE_DIM]).added.all()
    _check_consistent(ExperienceBank.load(service.save(tmp_path / "after")).entries())


@pytest.mark.timeout(160)
def test_killed_service_restarts_from_its_last_save(tmp_path):
    path = tmp_path / "checkpoint"
    service = _service(restore=path, max_restarts=1)
    keys = _keys(1, 300)
    service.add(keys[:200], keys[:200, :VALUE_DIM])
    service.save(path)
    service.add(keys[200:], keys[200:, :VALUE_DIM])  # not saved: lost with the process
    pid, version = service.ping()["pid"], service.version
    ray.kill(service.actor, no_restart=False)
    deadline = time.monotonic() + 120
    info = {"pid": pid}
    while info["pid"] == pid:  # the kill lands asynchronously; calls meanwhile fail or reach the old one
        assert time.monotonic() < deadline, "the service did not come back"
        time.sleep(0.1)
        try:
            info = service.ping()
        except ServiceError:
            pass
    assert info["restored"] and info["restarted"]
    assert service.version > version  # a replica of the lost bank is never taken for the restored one
    assert len(service) == 200
    assert len(ExperienceBank.load(path)) == 200  # the file the dead process left is whole


# -------------------------------------------------------------------------- SB3
@pytest.mark.timeout(200)
def test_two_sb3_learners_share_one_service(workers):
    service = _service()
    sent = ray.get([w.learn.remote(service, seed) for seed, w in enumerate(workers[:2])], timeout=180)
    manager = service.manager(gym.make("CartPole-v1").observation_space, gym.make("CartPole-v1").action_space)
    manager.flush()
    stats = manager.stats()
    assert min(sent) > 0 and stats["episodes_processed"] == sum(sent)
    assert stats["entries_added"] > 0 and len(service) > 0


def _wrapped_cartpole(service: ExperienceService):
    def make():
        return service.wrap(gym.make("CartPole-v1"), manager_kwargs={"segment_every": 4})
    return make


@pytest.mark.timeout(200)
def test_subproc_workers_write_into_the_service():
    from stable_baselines3.common.vec_env import SubprocVecEnv

    service = _service()
    # workers fork from a server that imported the library once (when this test starts it)
    multiprocessing.set_forkserver_preload(["integrations.ray.remote", "stable_baselines3"])
    venv = SubprocVecEnv([_wrapped_cartpole(service) for _ in range(2)], start_method="forkserver")
    try:
        venv.seed(0)
        obs = venv.reset()
        assert obs["experience"].shape[0] == 2
        episodes = 0
        for _ in range(150):
            _, _, dones, infos = venv.step(np.array([venv.action_space.sample() for _ in range(2)]))
            episodes += int(dones.sum())
            assert all("experience_guided" in i for i in infos)
    finally:
        venv.close()  # each worker's wrapper sends what it still holds before it exits
    space = gym.make("CartPole-v1")
    manager = service.manager(space.observation_space, space.action_space)
    manager.flush()
    assert episodes > 0
    assert manager.stats()["episodes_processed"] == episodes
    assert len(service) > 0


@pytest.mark.timeout(120)
def test_learner_attach_checks_spaces_and_shares_one_stand_in():
    from gymnasium import spaces

    from experience_wrappers.keys import RandomProjectionKeyEncoder

    service = _service()
    env = gym.make("CartPole-v1")
    first = service.manager(env.observation_space, env.action_space, segment_every=4)
    assert service.manager(env.observation_space, env.action_space) is first
    assert service.wrap(gym.make("CartPole-v1")).manager is first
    with pytest.raises(ValueError, match="layout"):
        service.manager(spaces.Box(-1.0, 1.0, (7,)), env.action_space)
    with pytest.raises(ValueError, match="another config"):
        service.manager(env.observation_space, env.action_space, segment_every=2)
    with pytest.raises(ValueError, match="key encoder"):
        service.manager(env.observation_space, env.action_space,
                        key_encoder=RandomProjectionKeyEncoder(env.observation_space, key_dim=8))
    with pytest.raises(ValueError, match="guided_ratio"):
        service.call("set_schedule", guided_ratio=1.5)


@pytest.mark.timeout(120)
def test_a_queued_episode_goes_out_at_the_next_episode_start_after_submit_delay():
    service = _service()
    env = service.wrap(gym.make("CartPole-v1"), manager_kwargs={"segment_every": 4})
    manager = env.manager
    manager.submit_delay = 0.2
    env.reset(seed=0)
    done = False
    while not done:
        _, _, term, trunc, _ = env.step(env.action_space.sample())
        done = term or trunc
    assert len(manager._outbox) == 1  # one episode waits for its batch (submit_batch=16) to fill
    time.sleep(0.25)
    env.reset()  # the wrapper reads the guided ratio at each episode start: the episode is due
    assert manager._outbox == []
