"""Tasks, paired credit and the learner process at the boundary (a hostile user's cases): tasks on
one bank never pair their episodes, guided episodes left without free ones are counted, a learner
process is never orphaned nor silently dead, a closed manager says what it cannot do, and task
ids are ints of the bank's width wherever they enter."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from experience_wrappers import ExperienceBank, ExperienceManager, ExperienceWrapper, ManagerConfig
from experience_wrappers.credit import PairedCredit
from experience_wrappers.keys import RandomProjectionKeyEncoder
from experience_wrappers.manager import Episode, Instance
from experience_wrappers.manager.backend import resolve_mode
from experience_wrappers.manager.process import LearnerProcessError

BOX = spaces.Box(-1, 1, (3,), np.float32)


def _episode(task: int, guided: bool, success: bool, inst: Instance | None = None) -> Episode:
    return Episode(observations=np.random.default_rng(task % 2 ** 32).uniform(-1, 1, (4, 3)).astype(np.float32), actions=np.zeros(4, np.int64), rewards=np.zeros(4),
                   success=success, guided=guided, task_id=task, instance=inst)


def test_two_tasks_replaying_the_same_seeds_never_pair_their_episodes():
    manager = ExperienceManager(ExperienceBank(), BOX, spaces.Discrete(2), config=ManagerConfig(mode="sync"))
    inst = Instance(group=0, index=0, members=2, guided=1, seed=0)  # the same (seed, group, index) in both tasks
    manager.submit(_episode(0, True, True, inst))
    manager.submit(_episode(1, False, False, inst))  # task 1's free episode: not task 0's baseline
    manager.flush()
    stats = manager.stats()
    assert stats["paired_credited"] == 0 and stats["paired_pending"] == 1
    manager.close()


def test_guided_episodes_of_an_instance_that_completes_without_free_ones_are_counted_as_dropped():
    paired = PairedCredit()
    paired.add("k", 1.0, guided=True, members=2, free=1)
    paired.add("k", 1.0, guided=True, members=2, free=1)  # complete: 2 of 2 seen, no free one came
    assert paired.stats()["paired_dropped"] == 2 and paired.pending == 0


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return True
        if state == "Z":  # exited (a zombie until a reaper collects it)
            return True
        time.sleep(0.5)
    os.kill(pid, signal.SIGKILL)
    return False


def test_a_learner_process_is_not_left_behind_by_a_main_process_that_dies_while_it_sends(tmp_path):
    """The actor killed while its queue's thread writes a message larger than the pipe: the learner, which
    read the message's start, waited for the rest forever (it held the pipe's write end itself)."""
    script = textwrap.dedent("""
        import os, time, numpy as np
        from gymnasium import spaces
        from experience_wrappers import ExperienceBank, ExperienceManager, ManagerConfig
        from experience_wrappers.keys import CallableKeyEncoder
        from experience_wrappers.manager import Episode
        from tests.process_support import slow_keys
        mgr = ExperienceManager(ExperienceBank(), spaces.Box(-1, 1, (4,), np.float32), spaces.Discrete(2),
                                key_encoder=CallableKeyEncoder(slow_keys, key_dim=4),
                                config=ManagerConfig(mode="process", segment_every=100_000))
        mgr.flush()
        print(mgr.learner_pid, flush=True)
        for n in (1_000, 200_000):  # the first keeps the learner busy 3 s; the second is about 3 MB
            mgr.submit(Episode(observations=np.zeros((n, 4), np.float32), actions=np.zeros(n, np.int64),
                               rewards=np.zeros(n), success=None, guided=False))
            mgr.poll()
        time.sleep(1.0)  # the pipe full, the second message half written, when the process ends
        os._exit(0)
    """)
    log = tmp_path / "out.txt"
    with open(log, "w") as f:  # (a file: the learner's inherited stdout must not hold the test up)
        subprocess.run([sys.executable, "-c", script], stdout=f, stderr=subprocess.STDOUT, timeout=120,
                       cwd=Path(__file__).resolve().parents[1], env={**os.environ, "PYTHONWARNINGS": "ignore"})
    pid = int(log.read_text().split()[0])
    assert _gone_within(pid, 30), "the learner process outlived its parent by 30 s"


def test_a_learner_process_is_not_left_behind_by_a_main_process_that_dies():
    script = textwrap.dedent("""
        import os, sys, gymnasium as gym
        from experience_wrappers import ExperienceBank, ExperienceWrapper
        env = ExperienceWrapper(gym.make("CartPole-v1"), ExperienceBank(seed=0), manager_kwargs={"mode": "process"})
        print(env.manager.learner_pid, flush=True)
        env.reset(seed=0)
        for _ in range(3000):
            if any(env.step(env.action_space.sample())[2:4]):
                env.reset()
        env.manager.poll()  # the learner has episodes to answer, and nobody will read its answers
        time.sleep(3)
        os._exit(0)
    """).replace("import os, sys,", "import os, sys, time,")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=180,
                         env={**os.environ, "PYTHONWARNINGS": "ignore"})
    pid = int(out.stdout.split()[0])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return
        if state == "Z":  # exited (a zombie until a reaper collects it)
            return
        time.sleep(0.5)
    os.kill(pid, signal.SIGKILL)
    pytest.fail("the learner process outlived its parent by 30 s")


def test_a_killed_learner_is_said_at_the_next_poll_and_a_closed_manager_says_what_it_cannot_do():
    env = ExperienceWrapper(gym.make("CartPole-v1"), ExperienceBank(seed=0), manager_kwargs={"mode": "process"})
    manager = env.manager
    os.kill(manager.learner_pid, signal.SIGKILL)
    time.sleep(0.5)
    with pytest.raises(LearnerProcessError, match="died.*ExperienceBank.load"):
        manager.poll()
    manager.close()
    other = ExperienceManager(ExperienceBank(), BOX, spaces.Discrete(2), config=ManagerConfig(mode="process"))
    other.close()
    other.poll()
    other.flush()  # nothing to hand over: both are no-ops once closed
    with pytest.raises(RuntimeError, match="this manager is closed"):
        other.save("unused")


def _local_action_space() -> spaces.Space:
    class LocalDiscrete(spaces.Discrete):  # a class pickle cannot find
        pass
    return LocalDiscrete(2)


def test_auto_mode_falls_back_to_a_thread_where_the_action_space_cannot_be_sent():
    assert resolve_mode("auto", RandomProjectionKeyEncoder(BOX), _local_action_space()) == "async"
    assert resolve_mode("auto", RandomProjectionKeyEncoder(BOX), spaces.Discrete(2)) == "process"


def test_task_ids_of_any_int64_value_train_and_larger_ones_are_refused_where_given():
    big, negative = 2 ** 62, -3
    manager = ExperienceManager(ExperienceBank(), BOX, spaces.Discrete(2),
                                key_encoder=RandomProjectionKeyEncoder(BOX, task_weight=0.5),
                                config=ManagerConfig(mode="sync", extractor_per_task=True))
    for task in (big, negative):
        manager.submit(_episode(task, False, True))
    manager.flush()
    assert manager.stats()["episodes_processed"] == 2
    manager.close()
    with pytest.raises(ValueError, match="task_id must be an int within int64"):
        ExperienceWrapper(gym.make("CartPole-v1"), ExperienceBank(), task_id=2 ** 70)
    env = ExperienceWrapper(gym.make("CartPole-v1"), ExperienceBank(), task_id=lambda obs, info: 2 ** 70,
                            manager_kwargs={"mode": "sync"})
    with pytest.raises(ValueError, match="the task_id function's value must be an int within int64"):
        env.reset(seed=0)


# ------------------------------------------------------------------ issue 35's manager probe
def _probe_episode(seed: int, success: object = None) -> Episode:
    rng = np.random.default_rng(seed)
    return Episode(observations=rng.uniform(-1, 1, (16, 3)).astype(np.float32), actions=rng.integers(0, 2, 16),
                   rewards=rng.normal(size=16), guided=False, success=success)  # type: ignore[arg-type]


def test_async_submits_from_several_threads_start_one_worker_and_lose_nothing():
    # each first submit started a worker of its own: episodes were lost and training ran on 4 threads at once
    import threading

    earlier = set(threading.enumerate())  # (other tests' managers may still have workers)
    manager = ExperienceManager(ExperienceBank(), BOX, spaces.Discrete(2),
                                config=ManagerConfig(mode="async", segment_every=4, batch_size=8))
    barrier = threading.Barrier(4)

    def submit(t: int) -> None:
        barrier.wait()
        for i in range(t, 32, 4):
            manager.submit(_probe_episode(i, success=bool(i % 2)))

    threads = [threading.Thread(target=submit, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(t.name == "crl-manager" and t not in earlier for t in threading.enumerate()) == 1
    manager.flush(timeout=60)
    assert manager.episodes_processed == 32 == manager.episodes_submitted
    manager.close()


@pytest.mark.parametrize("mode", ["sync", "async", "process"])
def test_a_closed_manager_refuses_ingest_and_merge_before_touching_the_bank(mode):
    bank = ExperienceBank()
    manager = ExperienceManager(bank, BOX, spaces.Discrete(2), config=ManagerConfig(mode=mode, segment_every=4))
    manager.submit(_probe_episode(0))
    manager.flush()
    manager.close()
    size = len(bank)
    with pytest.raises(RuntimeError, match="this manager is closed"):
        manager.request_merge()  # process mode merged the bank, then failed inside multiprocessing
    with pytest.raises(RuntimeError, match="this manager is closed"):
        manager.ingest(_probe_episode(1))
    assert len(bank) == size


@pytest.mark.parametrize("mode", ["sync", "process"])
def test_a_refused_submit_is_not_counted_nor_left_pending(mode):
    manager = ExperienceManager(ExperienceBank(), BOX, spaces.Discrete(2),
                                config=ManagerConfig(mode=mode, segment_every=4, handover_every=1))
    manager.submit(_probe_episode(0, success=False))
    manager.flush()
    with pytest.raises((TypeError, ValueError)):
        manager.submit(_probe_episode(1, success="no"))
    manager.flush()
    assert manager.episodes_submitted == 1 and manager.pending == 0
    manager.close()


def test_a_reader_whose_writer_died_mid_message_gets_an_error_not_a_wait():
    """The actor's side of keep_one_end: a learner killed while writing a large message (the OOM killer) made
    the actor's outbox.get wait for the rest forever, instead of raising that the learner died."""
    import multiprocessing as mp
    import threading

    from experience_wrappers.manager.process import keep_one_end
    from tests.process_support import write_then_die

    ctx = mp.get_context("spawn")
    outbox, inbox = ctx.Queue(), ctx.Queue()
    child = ctx.Process(target=write_then_die, args=(outbox,))
    child.start()
    keep_one_end(outbox, inbox)  # as LearnerProcess does after start()
    child.join(60)  # killed with its message half in the pipe (nobody read it)
    assert child.exitcode == -signal.SIGKILL
    got: list[BaseException | bytes] = []

    def read() -> None:
        try:
            got.append(outbox.get(timeout=20))
        except BaseException as exc:  # noqa: BLE001
            got.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(30)
    assert got and isinstance(got[0], EOFError | OSError), str(got[:1])[:200]
