"""The learner process (``mode="process"``): the same learning as sync mode, in another process;
its state saved and restored; its failures surfaced without harm to the bank."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import attrs
import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium import spaces
from stable_baselines3 import PPO
from stable_baselines3.common.vec_env import DummyVecEnv
from threadpoolctl import ThreadpoolController

from experience_wrappers import ExperienceBank, ExperienceManager, ManagerConfig
from experience_wrappers.extractor import ExtractorTrainer
from experience_wrappers.keys import CallableKeyEncoder
from experience_wrappers.manager import Episode
from experience_wrappers.manager.process import LEARNER_TORCH_THREADS, LearnerProcessError
from experience_wrappers.manager.threads import available_cores, blas_threads
from integrations.sb3 import CRLCallback, ExperienceVecEnv

OBS = spaces.Box(-1.0, 1.0, (4,), np.float32)
ACT = spaces.Discrete(3)
#: small batches so that a few dozen episodes train the extractor (outcome and self-supervised steps)
SMALL = dict(segment_every=4, batch_size=8, ssl_batch_size=8)


def make_manager(mode: str, bank: ExperienceBank | None = None, key_encoder=None, **config) -> ExperienceManager:
    bank = bank if bank is not None else ExperienceBank(seed=0, dedup_threshold=0.0)
    return ExperienceManager(bank, OBS, ACT, key_encoder=key_encoder,
                             config=ManagerConfig(mode=mode, **{**SMALL, **config}))


def poisoned_keys(obs, tasks):
    """Keys of observations, raising for an all-0.5 one (a failure only the learner process meets)."""
    obs = np.asarray(obs, dtype=np.float32)
    if np.any(np.all(obs == 0.5, axis=1)):
        raise ValueError("poisoned observation")
    return obs


@pytest.fixture
def managers():
    made: list[ExperienceManager] = []

    def make(mode: str, **kw) -> ExperienceManager:
        made.append(make_manager(mode, **kw))
        return made[-1]

    def close_all() -> None:
        for m in made:
            m.close()
    make.close_all = close_all  # type: ignore[attr-defined]
    yield make
    close_all()


def episodes(seed: int, n: int) -> list[Episode]:
    """Guided and free episodes; guided ones show entries 0-11 (the demonstration's)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        length = int(rng.integers(4, 20))
        guided = i % 2 == 1
        out.append(Episode(observations=rng.uniform(-1, 1, (length, 4)).astype(np.float32),
                           actions=rng.integers(0, 3, length), rewards=np.zeros(length),
                           success=bool(rng.random() < 0.5), guided=guided,
                           injected_ids=rng.choice(12, 4, replace=False) if guided else np.zeros(0, np.int64),
                           env_steps=10 * i))
    return out


def run(mgr: ExperienceManager, eps: list[Episode], flush_each: bool) -> None:
    rng = np.random.default_rng(99)
    demo = Episode(observations=rng.uniform(-1, 1, (48, 4)).astype(np.float32), actions=rng.integers(0, 3, 48),
                   rewards=np.zeros(48), success=True, guided=False)
    assert mgr.ingest(demo) == 12
    for ep in eps:
        mgr.submit(ep)
        if flush_each:
            mgr.flush()
    mgr.flush()


def extractor_state(folder: Path) -> dict[str, torch.Tensor]:
    return ExtractorTrainer.load(folder / "extractor.pt").extractor.state_dict()


def test_the_learner_runs_in_a_process_of_its_own(managers):
    mgr = managers("process")
    assert mgr.learner_pid is not None and mgr.learner_pid != os.getpid()
    assert managers("sync").learner_pid is None
    with pytest.raises(RuntimeError, match="mode='process'"):
        _ = mgr.extractor


@pytest.mark.skipif(available_cores() < 2 or blas_threads() is None, reason="needs 2 cores and numpy's BLAS pool")
def test_a_learner_process_leaves_the_actors_blas_threads_the_cores_it_does_not_use(managers):
    """Numpy's BLAS pool is lowered with torch's while a learner process runs, and restored after."""
    cores = available_cores()
    with ThreadpoolController().limit(limits=cores, user_api="blas"):  # numpy's default: a thread per core
        assert blas_threads() == cores
        first = managers("process")
        assert blas_threads() == max(1, cores - LEARNER_TORCH_THREADS)
        first.close()
        assert blas_threads() == cores  # restored when the last one stops
        managers("process", limit_actor_threads=False)
        assert blas_threads() == cores
        managers.close_all()


def test_a_learner_process_leaves_the_actors_torch_threads_the_cores_it_does_not_use(managers):
    before = torch.get_num_threads()
    cores = available_cores()
    torch.set_num_threads(cores)  # torch's default: a thread per core
    try:
        first, second = managers("process"), managers("process")
        assert torch.get_num_threads() == max(1, cores - LEARNER_TORCH_THREADS)
        first.close()
        assert torch.get_num_threads() == max(1, cores - LEARNER_TORCH_THREADS)  # the second still runs
        second.close()
        assert torch.get_num_threads() == cores  # restored when the last one stops
        third = managers("process", limit_actor_threads=False)
        assert third.learner_pid is not None and torch.get_num_threads() == cores
        third.close()
        managers("process")
        torch.set_num_threads(cores + 1)  # the user's own setting, made while it runs, is theirs
        managers.close_all()
        assert torch.get_num_threads() == cores + 1
    finally:
        torch.set_num_threads(before)


def test_process_mode_learns_as_sync_mode_does_when_flushed_after_each_episode(managers, tmp_path):
    """Same episodes, same seeds, a bank that never evicts or merges: the same entries (every
    column: values, utilities, training counts) and the same extractor weights."""
    sync, proc = managers("sync"), managers("process")
    eps = episodes(0, 40)
    run(sync, eps, flush_each=True)
    run(proc, eps, flush_each=True)
    s, p = sync.stats(), proc.stats()
    assert p["extractor_version"] == s["extractor_version"] > 0
    assert p["ssl_updates"] == s["ssl_updates"] > 0
    for key in ("episodes_processed", "entries_added"):
        assert p[key] == s[key]
    a, b = sync.bank.entries(), proc.bank.entries()
    assert a.keys() == b.keys()
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    sync.save(tmp_path / "sync")
    proc.save(tmp_path / "proc")
    ws, wp = extractor_state(tmp_path / "sync"), extractor_state(tmp_path / "proc")
    for name in ws:
        torch.testing.assert_close(ws[name], wp[name], rtol=0, atol=0, msg=name)
    # the learner's own training counts (the learner process keeps them without reading the bank)
    with np.load(tmp_path / "sync" / "samples.npz") as zs, np.load(tmp_path / "proc" / "samples.npz") as zp:
        assert zs["n_trained"].sum() > 0
        for name in ("trained_ids", "n_trained", "last_trained"):
            np.testing.assert_array_equal(zs[name], zp[name], err_msg=name)


def sent_batches(mgr: ExperienceManager) -> list[int]:
    """Record the size of every batch of episodes ``mgr`` sends its learner process from now on."""
    sizes: list[int] = []
    send = mgr.backend.process.send

    def recording(kind, *payload):
        if kind == "episodes":
            sizes.append(len(payload[0]))
        send(kind, *payload)
    mgr.backend.process.send = recording
    return sizes


def test_episodes_go_over_in_batches_and_learn_as_in_sync_mode(managers, tmp_path):
    """``handover_every=4``, flushed only at the end: one message per 4 episodes, each answered
    with one bank write, and still the entries and extractor of sync mode flushed after each."""
    sync, proc = managers("sync"), managers("process", handover_every=4)
    sizes = sent_batches(proc)
    writes: list[int] = []
    add = proc.bank.add
    proc.bank.add = lambda *a, **k: writes.append(len(a[0] if a else k["keys"])) or add(*a, **k)
    eps = episodes(0, 38)
    run(sync, eps, flush_each=True)
    run(proc, eps, flush_each=False)
    assert sizes == [4] * 9 + [2]  # the last two go with the final flush
    assert len(writes) <= 1 + 10 and max(writes) > 12  # the demonstration's write, then at most one per batch
    s, p = sync.stats(), proc.stats()
    assert p["extractor_version"] == s["extractor_version"] > 0
    a, b = sync.bank.entries(), proc.bank.entries()
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    sync.save(tmp_path / "sync")
    proc.save(tmp_path / "proc")
    for name, w in extractor_state(tmp_path / "sync").items():
        torch.testing.assert_close(w, extractor_state(tmp_path / "proc")[name], rtol=0, atol=0, msg=name)


@pytest.mark.parametrize("call", ["poll", "stats"])
def test_poll_and_stats_hand_the_waiting_episodes_over(managers, call):
    mgr = managers("process", handover_every=100)
    sizes = sent_batches(mgr)
    for ep in episodes(7, 5):
        mgr.submit(ep)
    assert sizes == [] and mgr.pending == 5
    getattr(mgr, call)()
    assert sizes == [5]
    mgr.flush()
    assert mgr.pending == 0 and len(mgr.bank) > 0


def test_a_bad_episode_costs_only_itself_in_its_batch(managers):
    mgr = managers("process", handover_every=4, key_encoder=CallableKeyEncoder(poisoned_keys, key_dim=4))
    good = episodes(8, 3)
    bad = Episode(observations=np.full((5, 4), 0.5, np.float32), actions=np.zeros(5, np.int64), rewards=np.zeros(5),
                  success=None, guided=False)  # its keys fail in the learner process (its shape passed at submit)
    for ep in (good[0], bad, good[1], good[2]):
        mgr.submit(ep)
    with pytest.raises(RuntimeError, match="learner process"):
        mgr.flush(timeout=30)
    mgr.flush()
    st = mgr.stats()
    assert st["episodes_processed"] == 3 and st["queue"] == 0  # the failed one is not pending
    assert st["entries_added"] == len(mgr.bank) == sum(len(range(0, len(ep.actions), 4)) for ep in good)


def test_unflushed_process_mode_processes_every_episode(managers):
    mgr = managers("process")
    eps = episodes(1, 60)
    run(mgr, eps, flush_each=False)
    st = mgr.stats()
    assert st["episodes_processed"] == st["episodes_submitted"] == 60
    assert st["queue"] == 0 and st["extractor_version"] > 0
    assert len(mgr.bank) == st["entries_added"]


def test_save_and_restore_round_trip_in_process_mode(managers, tmp_path):
    src = managers("process")
    run(src, episodes(2, 40), flush_each=False)
    src.save(tmp_path / "a")
    dst = managers("process", bank=ExperienceBank(seed=5, dedup_threshold=0.0))
    dst.restore(tmp_path / "a")
    assert dst.stats()["extractor_version"] == src.stats()["extractor_version"]
    assert dst.stats()["episodes_processed"] == src.stats()["episodes_processed"]
    dst.save(tmp_path / "b")
    a, b = (json.loads((tmp_path / f / "manager.json").read_text()) for f in ("a", "b"))
    for key in ("extractor_version", "ssl_updates", "episodes_processed", "entries_added", "baseline"):
        assert a[key] == b[key], key
    for name, w in extractor_state(tmp_path / "a").items():
        torch.testing.assert_close(w, extractor_state(tmp_path / "b")[name], rtol=0, atol=0)
    with np.load(tmp_path / "a" / "samples.npz") as za, np.load(tmp_path / "b" / "samples.npz") as zb:
        for name in za.files:
            np.testing.assert_array_equal(za[name], zb[name], err_msg=name)
    # the format is the manager's: a sync manager reads it too, and goes on learning
    sync = managers("sync", bank=ExperienceBank(seed=6, dedup_threshold=0.0))
    sync.restore(tmp_path / "a")
    assert len(sync.bank) == len(src.bank)
    run(dst, episodes(3, 10), flush_each=False)
    assert dst.stats()["episodes_processed"] == src.stats()["episodes_processed"] + 10


def test_a_killed_learner_process_leaves_the_bank_usable(managers, tmp_path):
    mgr = managers("process")
    run(mgr, episodes(4, 10), flush_each=False)
    n = len(mgr.bank)
    mgr.backend.process.process.kill()
    mgr.backend.process.process.join()
    mgr.submit(episodes(5, 1)[0])  # queued for a dead process: the flush says so
    with pytest.raises(LearnerProcessError, match="died"):
        mgr.flush(timeout=10)
    assert len(mgr.bank) == n
    assert mgr.bank.query(np.zeros((1, mgr.key_encoder.key_dim), np.float32), 2, mode="knn").ids.shape == (1, 2)
    mgr.bank.save(tmp_path / "bank")
    assert len(ExperienceBank.load(tmp_path / "bank")) == n


def test_a_learner_killed_while_flush_waits_is_said_with_its_exit_code_and_close_then_returns(managers):
    """Probe 17: a learner seen dead through a broken pipe, before it was reaped, was reported as
    "exit code None", and close() then asked the dead learner for a flush and raised again."""
    mgr = managers("process")
    run(mgr, episodes(4, 2), flush_each=False)
    mgr.backend.process.process.kill()  # not joined: the error is built before the process is reaped
    err = mgr.backend.process.died()
    assert "exit code -9" in str(err)
    with pytest.raises(LearnerProcessError, match="exit code -9"):
        mgr.flush(timeout=10)
    mgr.close()  # the death was said: close stops what is left, without raising it again
    with pytest.raises(RuntimeError, match="closed"):
        mgr.submit(episodes(5, 1)[0])


def test_an_error_in_the_learner_process_surfaces_at_the_next_call(managers):
    mgr = managers("process", key_encoder=CallableKeyEncoder(poisoned_keys, key_dim=4))
    bad = Episode(observations=np.full((5, 4), 0.5, np.float32), actions=np.zeros(5, np.int64), rewards=np.zeros(5),
                  success=None, guided=False)  # its keys fail in the learner process
    mgr.submit(bad)
    with pytest.raises(RuntimeError, match="learner process"):
        mgr.flush(timeout=30)
    run(mgr, episodes(6, 4), flush_each=False)  # it goes on with the next episodes
    assert mgr.stats()["episodes_processed"] == 4


def test_process_mode_needs_a_picklable_key_encoder():
    enc = CallableKeyEncoder(lambda obs: np.asarray(obs, np.float32), key_dim=4)
    with pytest.raises(TypeError, match="pickled"):
        ExperienceManager(ExperienceBank(), OBS, ACT, key_encoder=enc, config=ManagerConfig(mode="process"))


def test_ppo_with_the_learner_in_its_own_process():
    venv = ExperienceVecEnv(DummyVecEnv([lambda: gym.make("CartPole-v1")] * 4), ExperienceBank(seed=0),
                            manager_kwargs={"mode": "process", **SMALL})
    model = PPO("MultiInputPolicy", venv, n_steps=128, batch_size=128, n_epochs=1, seed=0)
    model.learn(1024, callback=CRLCallback())
    st = venv.manager.stats()
    assert st["episodes_processed"] == st["episodes_submitted"] > 0
    assert len(venv.manager.bank) > 0 and st["ssl_updates"] > 0  # the learner process trained
    venv.manager.close()
    venv.close()


def _run_script(tmp_path: Path, code: str) -> subprocess.CompletedProcess:
    script = tmp_path / "train.py"
    script.write_text(code)
    repo = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(repo), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120,
                          cwd=tmp_path)


@pytest.mark.parametrize("width", [4, 8192])
def test_a_script_without_a_main_guard_runs_the_learner_process(tmp_path, width):
    """``spawn`` would re-run an unguarded script in the child; the learner is started without
    the main module (it needs nothing of it), so the README's lines work in a plain script. With
    a wide observation the key encoder's projection pickles to megabytes (it once hung the
    script, its settings written into spawn's own pipe)."""
    out = _run_script(tmp_path, (
        "import numpy as np\n"
        "from gymnasium import spaces\n"
        "from experience_wrappers import ExperienceBank, ExperienceManager, ManagerConfig\n"
        f"mgr = ExperienceManager(ExperienceBank(), spaces.Box(-1, 1, ({width},), np.float32), spaces.Discrete(2),\n"
        "                         config=ManagerConfig(mode='process'))\n"
        "mgr.flush()\n"
        "print('learner pid', mgr.stats()['learner_pid'] if 'learner_pid' in mgr.stats() else 'ok')\n"
        "mgr.close()\n"))
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.count("learner pid") == 1  # the script ran once: the child did not run it again


def test_by_default_a_key_encoder_of_the_script_keeps_the_learner_on_a_thread(tmp_path):
    """``mode="auto"`` (the default) would need the script in a learner process for a key
    encoder defined there: it runs the learner on a thread instead, so an unguarded script that
    worked before the default changed still works."""
    out = _run_script(tmp_path, (
        "import numpy as np\n"
        "from gymnasium import spaces\n"
        "from experience_wrappers import ExperienceBank, ExperienceManager\n"
        "from experience_wrappers.keys import KeyEncoder\n"
        "class Enc(KeyEncoder):\n"
        "    key_dim = 4\n"
        "    def encode(self, obs_batch, task_ids):\n"
        "        return np.asarray(obs_batch, np.float32)\n"
        "mgr = ExperienceManager(ExperienceBank(), spaces.Box(-1, 1, (4,), np.float32), spaces.Discrete(2), "
        "key_encoder=Enc())\n"
        "print('mode', mgr.mode)\n"
        "mgr.close()\n"))
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["mode", "async"]


def test_a_key_encoder_of_the_script_without_a_main_guard_gets_an_error_that_says_what_to_do(tmp_path):
    """A key encoder whose class lives in the script needs the script in the child: ``spawn``
    re-imports it there, and without the guard the error names the guard (or mode='async')."""
    out = _run_script(tmp_path, (
        "import numpy as np\n"
        "from gymnasium import spaces\n"
        "from experience_wrappers import ExperienceBank, ExperienceManager, ManagerConfig\n"
        "from experience_wrappers.keys import KeyEncoder\n"
        "class Enc(KeyEncoder):\n"
        "    key_dim = 4\n"
        "    def encode(self, obs_batch, task_ids):\n"
        "        return np.asarray(obs_batch, np.float32)\n"
        "ExperienceManager(ExperienceBank(), spaces.Box(-1, 1, (4,), np.float32), spaces.Discrete(2), key_encoder=Enc(),\n"
        "                  config=ManagerConfig(mode='process')).close()\n"))
    assert out.returncode != 0
    assert 'if __name__ == "__main__":' in out.stderr, out.stderr[-2000:]


_WAITING_SCRIPT = (
    "import signal\n"
    "import time\n"
    "signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal, even if started ignoring it\n"
    "import numpy as np\n"
    "from gymnasium import spaces\n"
    "from experience_wrappers import ExperienceBank, ExperienceManager\n"
    "mgr = ExperienceManager(ExperienceBank(), spaces.Box(-1, 1, (4,), np.float32), spaces.Discrete(2))\n"
    "mgr.flush()\n"
    "print(mgr.learner_pid, flush=True)\n"
    "time.sleep(60)\n")


def _start_waiting_script(tmp_path: Path) -> tuple[subprocess.Popen, int]:
    script = tmp_path / "train.py"
    script.write_text(_WAITING_SCRIPT)
    repo = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(repo), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=tmp_path, start_new_session=True)
    assert proc.stdout is not None
    return proc, int(proc.stdout.readline())


def _gone(pid: int, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:
            with open(f"/proc/{pid}/stat") as f:  # a zombie (exited, not reaped yet) is gone too
                if f.read().split(") ")[-1].startswith("Z"):
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.2)
    return False


@pytest.mark.skipif(sys.platform != "linux", reason="process groups and /proc")
def test_ctrl_c_stops_the_script_and_its_learner_with_one_traceback(tmp_path):
    """A terminal's Ctrl-C reaches the whole process group: the learner ignores it and stops
    with the script, which prints the only traceback."""
    proc, learner = _start_waiting_script(tmp_path)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode != 0 and "KeyboardInterrupt" in err
    assert err.count("Traceback") == 1 and "manager/process.py" not in err, err[-3000:]
    assert _gone(learner, 30)


@pytest.mark.skipif(sys.platform != "linux", reason="/proc")
def test_a_learner_whose_script_was_killed_stops_on_its_own(tmp_path):
    """SIGKILL gives the script no chance to stop its learner: the learner sees its parent gone
    and ends, instead of waiting for messages forever."""
    proc, learner = _start_waiting_script(tmp_path)
    proc.kill()
    proc.communicate(timeout=30)
    assert _gone(learner, 30)


def test_no_credit_overtakes_the_eviction_of_its_entry(managers, tmp_path):
    """A small bank that evicts all the time, guided episodes crediting its newest entries,
    batches of 4: after a flush the learner holds samples of live entries only (a credit sent
    after the eviction of its entry would bring a dead entry back into its samples)."""
    mgr = managers("process", handover_every=4, batch_size=100_000,  # no training: every sample stays
                   bank=ExperienceBank(seed=0, dedup_threshold=0.0, capacity=24))
    rng = np.random.default_rng(11)
    run(mgr, [], flush_each=False)  # the demonstration's entries, and the learner process is up
    for i, ep in enumerate(episodes(12, 80)):
        live = np.sort(mgr.bank.entries()["id"])
        if i % 2:
            ep = attrs.evolve(ep, injected_ids=rng.choice(live[-8:], 4, replace=False))
        mgr.submit(ep)
        if i % 4 == 3:  # a batch went over: let the learner answer it before the next poll applies it
            time.sleep(0.1)
    mgr.flush()
    mgr.save(tmp_path / "m")
    with np.load(tmp_path / "m" / "samples.npz") as z:
        held = z["ids"]
    assert len(held) > 0 and len(mgr.bank) == 24
    assert set(held.tolist()) <= set(mgr.bank.entries()["id"].tolist())
