"""The experience service at its boundary, as a careless user meets it (a real local Ray, real
CartPole): a named service outlives the handles dropped in this process, bad arguments are refused
before an actor exists and free its name, a save or a shutdown takes the episodes this handle
still holds, and a bank or a learner of the wrong kind is refused where it is given."""

from __future__ import annotations

import gc
import multiprocessing
import time

import gymnasium as gym
import numpy as np
import pytest

ray = pytest.importorskip("ray")

from experience_wrappers import ExperienceBank, ExperienceWrapper  # noqa: E402
from integrations.ray import ServiceError, connect, start_service  # noqa: E402
from integrations.ray.service import DESCRIBE_TTL  # noqa: E402
from tests.ray_support import local_ray  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def ray_local():
    yield from local_ray("crl-boundary")


def _episodes(env: gym.Env, n: int) -> None:
    env.reset(seed=0)
    for _ in range(n):
        done = False
        while not done:
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            done = terminated or truncated
        env.reset()


def test_a_named_service_outlives_the_handles_dropped_in_this_process():
    service = start_service(name="kept", num_cpus=0)
    service = connect("kept")  # the first handle is gone
    gc.collect()
    time.sleep(0.5)
    assert service.ping()["size"] == 0
    # probe 17: a second service of the same name got Ray's own error, which does not say what to do
    with pytest.raises(ValueError, match=r"'kept' already runs in Ray namespace .*connect\('kept'\)"):
        start_service(name="kept", num_cpus=0)
    assert service.ping()["size"] == 0  # the running one is untouched
    service.shutdown()


@pytest.mark.parametrize("kwargs, match", [
    ({"key_dim": 0, "value_dim": 2}, "key_dim must be a positive int"),
    ({"value_dim": 2}, "key_dim and value_dim fix the bank's dims together"),
    ({"torch_threads": 0}, "torch_threads must be"),
    ({"switch_interval": -1.0}, "switch_interval must be"),
    ({"num_cpus": 100}, "more than the Ray cluster has"),
])
def test_bad_arguments_are_refused_before_a_service_exists_and_its_name_stays_free(kwargs, match):
    with pytest.raises(ValueError, match=match):
        start_service(name="retry", **kwargs)
    start_service(name="retry", num_cpus=0).shutdown()  # the name was never taken


def test_a_restore_folder_that_is_not_a_bank_is_refused_and_restored_settings_are_said(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="is an empty folder"):
        start_service(num_cpus=0, restore=tmp_path / "empty")
    bank = ExperienceBank(capacity=100)
    bank.add(np.eye(4, dtype=np.float32), np.ones((4, 2), np.float32))
    bank.save(tmp_path / "bank")
    # a manager's folder: named before the actor starts (Ray's "actor died" text hid the BankFileError)
    from experience_wrappers import ExperienceManager

    manager = ExperienceManager(ExperienceBank(), gym.spaces.Box(-1, 1, (4,)), gym.spaces.Discrete(2))
    manager.save(tmp_path / "manager")
    manager.close()
    with pytest.raises(ValueError, match=r"holds a 'complementary-rl.manager' save, not a bank folder.*restore_state"):
        start_service(num_cpus=0, restore=tmp_path / "manager")
    with pytest.warns(UserWarning, match=r"restored its bank from .*capacity=100 \(asked 1000000\)"):
        service = start_service(num_cpus=0, restore=tmp_path / "bank", capacity=1_000_000)
    assert service.config.capacity == 100
    service.shutdown()


def test_a_save_and_a_shutdown_take_the_episodes_this_handle_still_holds(tmp_path):
    service = start_service(name="held", num_cpus=0)
    env = service.wrap(gym.make("CartPole-v1"), manager_kwargs={"segment_every": 4})
    _episodes(env, 10)
    manager = env.manager  # the handle's learner stand-in
    assert manager.pending > 0  # queued here, not sent yet
    saved = service.save(tmp_path / "bank")
    assert len(ExperienceBank.load(saved)) > 0
    _episodes(env, 3)
    service.shutdown()
    assert manager.pending == 0
    start_service(name="held", num_cpus=0).shutdown()  # shutdown returned once the name was free
    # probe 17: an env stepped on after its service's shutdown queued its episodes for a timer that failed out
    # of sight, and its close() then raised Ray's "actor died unexpectedly"
    with pytest.raises(ServiceError, match="'held' was shut down"):
        _episodes(env, 1)
    with pytest.raises(ServiceError, match="was shut down"):
        len(service)
    env.close()  # nothing to send to: it returns


def test_a_services_bank_needs_its_learner_and_a_learner_needs_its_spaces():
    service = start_service(num_cpus=0)
    with pytest.raises(ValueError, match="an experience service's.*service.wrap"):
        ExperienceWrapper(gym.make("CartPole-v1"), service.bank)
    other = service.manager(gym.spaces.Box(-1, 1, (6,), np.float32), gym.spaces.Discrete(3))
    with pytest.raises(ValueError, match="the manager given serves observation Box"):
        ExperienceWrapper(gym.make("CartPole-v1"), service.bank, manager=other)
    service.shutdown()


def test_another_handle_sees_a_loaded_bank(tmp_path):
    service = start_service(name="loaded", num_cpus=0)
    service.add(np.eye(4, dtype=np.float32), np.ones((4, 2), np.float32))
    other = connect("loaded")
    assert other.dims is not None and other.dims["key_dim"] == 4
    bank = ExperienceBank()
    bank.add(np.eye(6, dtype=np.float32), np.ones((6, 3), np.float32))
    bank.save(tmp_path / "wide")
    service.load(tmp_path / "wide")
    time.sleep(DESCRIBE_TTL + 0.1)
    assert other.dims is not None and other.dims["key_dim"] == 6
    service.shutdown()


def _use_in_child(service, out) -> None:
    try:
        service.ping()
        out.put("answered")
    except ServiceError as exc:
        out.put(str(exc))


def test_a_handle_used_in_a_forked_child_is_refused_rather_than_hang():
    service = start_service(num_cpus=0)
    service.ping()
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    child = ctx.Process(target=_use_in_child, args=(service, out))
    child.start()
    child.join(30)
    assert not child.is_alive()
    assert "forked from one connected to Ray" in out.get(timeout=5)
    service.shutdown()


@ray.remote(num_cpus=0)
def _collect_without_close(service, n_episodes: int) -> int:
    env = service.wrap(gym.make("CartPole-v1"), manager_kwargs={"segment_every": 4})
    _episodes(env, n_episodes)
    return env.manager.episodes_submitted  # the task ends here, without env.close()


def test_episodes_queued_in_a_task_that_ends_without_close_still_reach_the_learner():
    service = start_service(name="unclosed", num_cpus=0)
    try:
        assert ray.get(_collect_without_close.remote(service, 5)) == 5
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and service.call("learner_stats")["episodes_processed"] < 5:
            time.sleep(0.2)
        # (lost before: the task's last episodes waited for a call from it that never came)
        assert service.call("learner_stats")["episodes_processed"] == 5
    finally:
        service.shutdown()


def test_closing_a_services_env_hands_its_episodes_over_without_waiting_for_the_services_backlog(monkeypatch):
    """``env.close()`` flushed: it waited, inside the one-call-at-a-time actor, until the learner had processed every
    client's episodes, so a second client's calls timed out meanwhile (14 s for a backlog of 3,650 episodes)."""
    from experience_wrappers import ExperienceManager

    service = start_service(name="closing", num_cpus=0)
    env = service.wrap(gym.make("CartPole-v1"), manager_kwargs={"segment_every": 4})
    _episodes(env, 10)
    manager = env.manager
    assert manager.pending > 0
    flushed = []
    monkeypatch.setattr(service, "flush", lambda *a, **k: flushed.append(a))  # the service-wide wait
    env.close()
    assert manager.pending == 0 and flushed == []  # sent and answered, the backlog not waited for
    monkeypatch.undo()
    service.flush()
    assert len(service) > 0  # the episodes reached the learner
    with pytest.raises(ValueError, match="an experience service's.*service.wrap"):
        ExperienceManager(service.bank, env.observation_space, env.action_space)  # raw AttributeError before
    service.shutdown()


def test_after_ray_shutdown_closing_a_services_env_that_holds_episodes_says_so_and_starts_no_cluster():
    service = start_service(name="gone", num_cpus=0)
    env = service.wrap(gym.make("CartPole-v1"), manager_kwargs={"segment_every": 4})
    _episodes(env, 5)
    env.manager.poll()  # sent, their answers not read yet
    assert env.manager.pending > 0
    ray.shutdown()
    try:
        with pytest.raises(ServiceError, match=r"Ray was shut down in this process"):
            env.close()  # before: ray.get started a new local cluster and raised its own error
        assert not ray.is_initialized()
    finally:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, namespace="crl-boundary")


def test_wrap_takes_local_reads_and_a_later_call_with_other_spaces_is_refused_by_the_handle():
    """``service.wrap(env, local_reads=False)`` failed in the wrapper's options after the handle's stand-in was made
    with local reads, so the right retry was refused; and after a restart, re-attaching with the wrapped env's spaces
    (the error's own hint, misread) was taken by the new learner while the handle kept its old stand-in."""
    service = start_service(name="reads", num_cpus=0)
    env = service.wrap(gym.make("CartPole-v1"), local_reads=False)
    assert env.manager.local_reads is False
    with pytest.raises(ValueError, match=r"this handle's learner stand-in serves observation Box.*env.unwrapped"):
        service.manager(env.observation_space, env.action_space)  # the wrapped env's Dict space
    env.close()
    service.shutdown()
