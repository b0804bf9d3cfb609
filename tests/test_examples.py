"""Every script in ``examples/`` runs as a new user would run it, for a few hundred steps."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run(script: str, *args: str, cwd: Path) -> str:
    proc = subprocess.run([sys.executable, str(EXAMPLES / script), *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return proc.stdout


@pytest.mark.slow
def test_ppo_cartpole(tmp_path):
    out = run("ppo_cartpole.py", "--steps", "1024", "--out", "run", cwd=tmp_path)
    assert (tmp_path / "run" / "model.zip").is_file() and (tmp_path / "run" / "experience").is_dir()
    assert "provenance:" in out and "python -m experience_wrappers.inspect" in out


@pytest.mark.slow
def test_evaluate_with_and_without(tmp_path):
    out = run("evaluate_with_and_without.py", "--steps", "1024", "--episodes", "4", cwd=tmp_path)
    assert "with experience: return" in out and "without experience: return" in out
    assert "episodes handed to the bank by evaluation: 0" in out


@pytest.mark.slow
def test_resume_from_checkpoint(tmp_path):
    out = run("resume_from_checkpoint.py", "--steps", "2048", "--out", "ck", cwd=tmp_path)
    assert "resuming from cartpole_2048_steps.zip" in out and "resumed to" in out
    assert (tmp_path / "ck" / "cartpole_2048_steps_experience").is_dir()
    run("resume_from_checkpoint.py", "--steps", "16", "--out", "few", cwd=tmp_path)  # one rollout: 256 zips before
    assert len(list((tmp_path / "few").glob("cartpole_*_steps.zip"))) == 1


@pytest.mark.slow
def test_trials_new_layout(tmp_path):
    pytest.importorskip("minihack")
    out = run("trials_new_layout.py", "--steps", "1024", "--goals", "2", "--repeats", "1", "--out", "run", cwd=tmp_path)
    assert "with demonstration: success by trial" in out and (tmp_path / "run" / "model.zip").is_file()
    again = run("trials_new_layout.py", "--load", "run", "--goals", "2", "--repeats", "1", cwd=tmp_path)
    assert "loaded run" in again and "held-out goals 2, runs 2" in again


@pytest.mark.slow
def test_keyroom_from_demonstrations(tmp_path):
    pytest.importorskip("minihack")
    out = run("keyroom_from_demonstrations.py", "--demos", "2", "--steps", "1024", "--eval-episodes", "2",
              cwd=tmp_path)
    assert "2 demonstrations:" in out and "states pinned for self-imitation" in out
    last = out.strip().splitlines()[-1]
    assert last.startswith("final success: ") and "(eval with experience " in last and ", without " in last


@pytest.mark.slow
def test_make_demo_prints_a_verdict_and_a_plot_from_zero(tmp_path, capsys):
    pytest.importorskip("minihack")
    from benchmarks.suites import demo

    results = demo.main(["--steps", "1024", "--demos", "2", "--eval-episodes", "2", "--out", str(tmp_path / "d.json")])
    out = capsys.readouterr().out
    assert set(results) == {"ppo", "crl-sil-obs"} and results["crl-sil-obs"]["demonstrations_used"] == 2
    assert "verdict:" in out and (tmp_path / "d.png").is_file()


@pytest.mark.slow
def test_metaworld_reach_hidden_goal(tmp_path):
    pytest.importorskip("metaworld")
    out = run("metaworld_reach_hidden_goal.py", "--steps", "512", "--n-steps", "64", "--goals", "1", "--repeats", "1",
              "--out", "run", cwd=tmp_path)
    assert "with demonstration: success by trial" in out and (tmp_path / "run" / "model.zip").is_file()
    again = run("metaworld_reach_hidden_goal.py", "--load", "run", "--goals", "1", "--repeats", "1", cwd=tmp_path)
    assert "loaded run" in again and "without experience: success by trial" in again
