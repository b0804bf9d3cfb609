"""The runner from anywhere: ``crl-bench --env ANY_ID``, hyperparameter overrides, refusals
before any worker starts, model and TensorBoard output, results filed under their own suite."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.runner import DEFAULT_HYPERPARAMS, main, parse_hyperparams, result_path


def test_an_unknown_env_id_fails_once_before_any_worker(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["--env", "NoSuchEnv-v9", "--results", str(tmp_path)])
    err = capsys.readouterr().err
    assert err.count("unknown env id 'NoSuchEnv-v9'") == 1 and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("item", ["normalize:true", "frame_stack:4", "frobnicate:3"])
def test_zoo_keys_the_runner_cannot_apply_are_refused(tmp_path, capsys, item):
    with pytest.raises(SystemExit):
        main(["--env", "CartPole-v1", "--results", str(tmp_path), "--hyperparams", item])
    key = item.split(":")[0]
    assert f"hyperparameter(s) ['{key}'] would not be applied" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("item, why", [("learning_rate:lin_abc", "not a linear schedule"),
                                       ("n_envs:0", "n_envs: 0 is not in [1, inf]"),
                                       ("learning_rate:-1", "learning_rate: -1 is not in (0, inf]"),
                                       ("n_envs:abc", "n_envs: 'abc' is not a number")])
def test_values_out_of_range_are_refused_before_any_run(tmp_path, capsys, item, why):
    with pytest.raises(SystemExit):
        main(["--env", "CartPole-v1", "--results", str(tmp_path), "--hyperparams", item])
    assert why in capsys.readouterr().err and list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_an_rl_zoo3_block_runs_as_rl_zoo3_reads_it(tmp_path, capsys):
    """rl-zoo3's own CartPole block: linear schedules applied, policy and policy_kwargs skipped with a line."""
    hp = tmp_path / "zoo.yml"
    hp.write_text("CartPole-v1:\n  n_envs: 2\n  n_timesteps: !!float 1e5\n  policy: 'MlpPolicy'\n"
                  "  policy_kwargs: \"dict(net_arch=[8])\"\n  n_steps: 32\n  batch_size: 64\n  n_epochs: 1\n"
                  "  learning_rate: lin_0.001\n  clip_range: lin_0.2\n")
    assert main(["--env", "CartPole-v1", "--arms", "ppo", "--steps", "128", "--eval-episodes", "0",
                 "--results", str(tmp_path / "r"), "--hyperparams", str(hp)]) == 0
    out = capsys.readouterr().out
    assert "skipping policy (" in out and "skipping policy_kwargs (" in out
    res = json.loads(result_path(tmp_path / "r", "CartPole-v1", "CartPole-v1", "ppo", 0).read_text())
    assert res["hyperparameters"]["learning_rate"] == "lin_0.001" and "policy" not in res["hyperparameters"]
    assert res["total_steps"] >= 128


def test_the_shipped_cartpole_block_is_rl_zoo3s_tuned_one():
    from benchmarks.config import load_hyperparams

    hyper = load_hyperparams("CartPole-v1")
    assert hyper["tuned_from"] == "rl-baselines3-zoo"
    assert (hyper["n_steps"], hyper["gae_lambda"], hyper["gamma"], hyper["n_epochs"]) == (32, 0.8, 0.98, 20)
    assert hyper["learning_rate"] == "lin_0.001" and hyper["clip_range"] == "lin_0.2"


def test_a_yaml_file_and_overrides_together(tmp_path):
    hp = tmp_path / "my.yml"
    hp.write_text("x: 1\n")
    assert parse_hyperparams([str(hp), "n_steps:64"]) == (hp, {"n_steps": 64})


@pytest.mark.slow
def test_the_console_script_runs_any_env_from_another_folder(tmp_path):
    script = shutil.which("crl-bench", path=str(Path(sys.executable).parent))
    assert script, "crl-bench is installed by pip install -e . (make install)"
    proc = subprocess.run([script, "--env", "Acrobot-v1", "--arms", "crl", "--name", "mine", "--steps", "256",
                           "--eval-episodes", "0", "--hyperparams", "n_envs:2", "n_steps:64", "batch_size:64",
                           "n_epochs:1", "--save-model", "--tensorboard", "tb"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "hyperparameters from defaults" in proc.stdout  # printed ...
    res = json.loads(result_path(tmp_path / "crl-results", "mine", "Acrobot-v1", "crl", 0).read_text())
    assert res["suite"] == "mine"
    assert res["hyperparameters"] == {**DEFAULT_HYPERPARAMS, "n_envs": 2, "n_steps": 64, "batch_size": 64,
                                      "n_epochs": 1}  # ... and stored, with their source
    assert res["hyperparameters_source"].startswith("defaults")
    model_dir = Path(res["model_dir"])
    assert (model_dir / "model.zip").is_file() and (model_dir / "experience" / "bank").is_dir()
    assert list((tmp_path / "tb" / "mine" / "Acrobot-v1" / "crl" / "seed0").rglob("events.out.tfevents*"))
    # the report goes beside the results it reads; the repository's docs are not touched
    docs = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"
    before = docs.stat().st_mtime_ns
    report = shutil.which("crl-report", path=str(Path(sys.executable).parent))
    proc = subprocess.run([report], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert (tmp_path / "crl-results" / "report.md").is_file() and "mine" in (tmp_path / "crl-results" / "report.md").read_text()
    assert docs.stat().st_mtime_ns == before
