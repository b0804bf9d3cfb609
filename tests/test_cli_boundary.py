"""The benchmark CLIs at their boundary: stopping a runner stops its runs (issue 24, case 9)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process tree from /proc")


def _parents() -> dict[int, int]:
    """pid -> parent pid of every process, from /proc."""
    out = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            out[int(d.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    return out


def _descendants(pid: int) -> set[int]:
    parents = _parents()
    found, frontier = set(), {pid}
    while frontier:
        frontier = {c for c, p in parents.items() if p in frontier} - found
        found |= frontier
    return found


def _alive(pid: int) -> bool:
    """Running (a zombie, dead but not yet reaped, does not count)."""
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _stop_while_training(cmd: list[str], cwd: Path,
                         sig: signal.Signals = signal.SIGTERM) -> tuple[subprocess.CompletedProcess, set[int]]:
    """Start ``cmd``, wait until its workers have begun, send it ``sig``; return it and every process it started."""
    # files, not pipes: an orphaned worker would hold a pipe open and hang the test
    with open(cwd / "out.txt", "w") as out, open(cwd / "err.txt", "w") as err:
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=err, text=True)
    workers: set[int] = set()
    logs = lambda: ((cwd / "out.txt").read_text()[-2000:], (cwd / "err.txt").read_text()[-2000:])  # noqa: E731
    try:
        deadline = time.monotonic() + 60
        while not workers and time.monotonic() < deadline and proc.poll() is None:
            workers = _descendants(proc.pid)
            time.sleep(0.1)
        assert workers, f"no worker started: {logs()}"
        time.sleep(4)  # the worker has taken its job and is importing/training
        assert proc.poll() is None, logs()
        workers |= _descendants(proc.pid)  # workers, and whatever they started
        proc.send_signal(sig)
        proc.wait(timeout=15)
        deadline = time.monotonic() + 5
        while any(_alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        return subprocess.CompletedProcess(cmd, proc.returncode, *logs()), workers
    finally:  # never leave our own processes behind, whatever the outcome
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for w in workers:
            if _alive(w):
                os.kill(w, signal.SIGKILL)


#: a run of crl-bench long enough to be stopped while training
CRL_BENCH = ["-m", "benchmarks.harness.runner", "--env", "CartPole-v1", "--arms", "ppo", "--steps", "10000000",
             "--eval-episodes", "0", "--hyperparams", "n_envs:1", "n_steps:64", "batch_size:64", "n_epochs:1",
             "--results", "res"]


@pytest.mark.slow
@pytest.mark.parametrize("cmd", [
    CRL_BENCH,
    ["-m", "benchmarks.suites.trials", "--family", "darkroom", "--arms", "ppo", "--steps", "10000000", "--jobs", "1",
     "--out", "res"],
], ids=["crl-bench", "trials"])
def test_sigterm_stops_the_runner_and_its_workers_and_writes_no_result(tmp_path, cmd):
    done, workers = _stop_while_training([sys.executable, *cmd], tmp_path)
    alive = sorted(w for w in workers if _alive(w))
    assert not alive, f"workers {alive} still training after the runner was stopped"
    assert done.returncode == 128 + signal.SIGTERM, (done.returncode, done.stderr[-2000:])
    assert "stopped" in done.stderr and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert not [p for p in (tmp_path / "res").rglob("*") if p.is_file()]


@pytest.mark.slow
def test_a_runner_killed_outright_takes_its_workers_with_it(tmp_path):
    """kill -9 leaves the runner no chance to clean up: the kernel ends its workers (PR_SET_PDEATHSIG)."""
    done, workers = _stop_while_training([sys.executable, *CRL_BENCH], tmp_path, signal.SIGKILL)
    assert done.returncode == -signal.SIGKILL
    alive = sorted(w for w in workers if _alive(w))
    assert not alive, f"workers {alive} still training after the runner was killed"
    assert not [p for p in (tmp_path / "res").rglob("*") if p.is_file()]


@pytest.mark.parametrize("args, says", [
    (["--seeds", "-5"], "--seeds: -5 is not in [0, 2**32 - 1]"),
    (["--out", "a_file"], "--out a_file: a_file is a file, not a folder"),
    (["--out", "a_file/sub"], "--out a_file/sub: a_file is a file, so no folder can be made under it"),
], ids=["negative-seed", "out-is-a-file", "out-under-a-file"])
def test_the_trials_command_refuses_bad_arguments_before_any_run(tmp_path, monkeypatch, capsys, args, says):
    """Issue 36, case 16: a raw worker traceback after 11 s (a negative seed), or a failure after
    training (--out a file), before; now one line and exit code 2 at once."""
    from benchmarks.suites.trials import main

    (tmp_path / "a_file").write_text("not a folder")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stop:
        main(["--family", "darkroom", "--arms", "ppo", "--steps", "1000", "--jobs", "1", *args])
    out, err = capsys.readouterr()
    assert stop.value.code == 2 and err.strip().splitlines()[-1].endswith(says), err
    assert "runs to do" not in out


def test_a_trials_arm_that_names_its_budget_keeps_it(tmp_path, capsys):
    """``--steps`` is the default budget; an arm with ``"steps"`` in ARMS runs (and is found done) at its own."""
    import json

    from benchmarks.suites.trials import _settings, main

    arm = "crl-trials-located-600k-noimitate-bonus-inf"
    path = tmp_path / arm / "seed0.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"settings": _settings("ml1-reach-moves", arm, 600_000, 5)}))
    assert main(["--family", "ml1-reach-moves", "--arms", arm, "--seeds", "0", "--jobs", "1",
                 "--out", str(tmp_path)]) == 0
    assert f"skip {path}" in capsys.readouterr().out


@pytest.mark.parametrize("module, args, says", [
    ("overhead", ["--envs", "CartPole-v1", "--out", "a_folder"], "--out a_folder: a folder, not a file"),
    ("overhead", ["--envs", "CartPole-v1", "--out", "a_file/x.json"], "--out a_file/x.json: a_file is a file"),
    ("overhead", ["--envs", "CartPole-v1", "--rounds", "0"], "--steps, --rounds and --n-envs must be positive"),
    ("overhead", ["--envs", "Nope-v0"], "no hyperparameters for 'Nope-v0'"),
    ("step_profile", ["--out", "a_folder"], "--out a_folder: a folder, not a file"),
    ("step_profile", ["--env", "Nope-v0"], "--env Nope-v0: Environment `Nope` doesn't exist"),
    ("overhead", ["--envs", "CartPole-v1", "--seed", "-1"], "--seed: -1 is not in [0, 2**32 - 1]"),
    ("overhead", ["--envs"], "--envs and --arms name at least one each"),
    ("overhead", ["--envs", "CartPole-v1", "--torch-threads", "-3"], "--torch-threads must be >= 0"),
    ("scaleout", ["--workers", "0"], "--workers must be >= 1"),
    ("scaleout", ["--seconds", "-1"], "--seconds must be > 0"),
    ("scaleout", ["--out", "a_folder"], "--out a_folder: a folder, not a file"),
    ("scaleout", ["--only-learner", "--out", "none.json"], "--only-learner keeps the other figures of --out"),
    ("query_latency", ["--k", "0"], "--k 0: too small"),
    ("query_latency", ["--out", "a_folder"], "--out a_folder: a folder, not a file"),
    ("step_timers", ["--env", "CartPole-v1", "--out", "a_folder"], "--out a_folder: a folder, not a file"),
    ("step_timers", ["--env", "Pendulum-v1"], "no hyperparameters for 'Pendulum-v1'"),
    ("step_profile", ["--env", "no_such_module:Thing-v0"], "the module 'no_such_module' cannot be imported"),
])
def test_the_perf_commands_refuse_bad_arguments_before_measuring(tmp_path, monkeypatch, capsys, module, args, says):
    """Their --out was found to be a folder only when the result was written, after minutes of measuring."""
    import importlib

    main = importlib.import_module(f"benchmarks.perf.{module}").main
    (tmp_path / "a_file").write_text("not a folder")
    (tmp_path / "a_folder").mkdir()
    monkeypatch.chdir(tmp_path)
    start = time.perf_counter()
    with pytest.raises(SystemExit) as stop:
        main(args)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and says in err.strip().splitlines()[-1], err
    assert time.perf_counter() - start < 5  # before any run (a run takes tens of seconds)


def test_equivalence_names_a_folder_without_seeds_and_a_folder_given_as_out(tmp_path, capsys):
    from benchmarks.harness.equivalence import main

    (tmp_path / "empty").mkdir()
    for args, says in ((["--compare-runs", str(tmp_path / "empty"), str(tmp_path / "empty")], "holds 0 seed*.json"),
                       (["--out", str(tmp_path), "--scope", "run"], "a folder, not a file")):
        with pytest.raises(SystemExit) as stop:
            main(args)
        assert stop.value.code == 2 and says in capsys.readouterr().err


def test_an_env_of_ones_own_is_known_by_gymnasiums_module_form(tmp_path, monkeypatch) -> None:
    """``"module:EnvId"`` (gymnasium's form for an env registered when its module is imported) is known to the
    commands that check an id before running, as ``gym.make`` knows it; ``gym.spec`` alone did not import the module."""
    from benchmarks.harness.cli_checks import check_gym_id
    from benchmarks.harness.runner import check_env_id

    (tmp_path / "probe_chain_envs.py").write_text(
        "import gymnasium as gym\n"
        "gym.register('ProbeChain-v0', entry_point='gymnasium.envs.classic_control:CartPoleEnv')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    check_gym_id("probe_chain_envs:ProbeChain-v0")
    check_env_id("probe_chain_envs:ProbeChain-v0")
    with pytest.raises(ValueError, match="ProbeChain2"):
        check_gym_id("probe_chain_envs:ProbeChain2-v0")
