"""The runner from anywhere: ``crl-bench --env ANY_ID``, hyperparameter overrides, refusals
before any worker starts, model and TensorBoard output, results filed under their own suite."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.harness.runner import DEFAULT_HYPERPARAMS, main, parse_hyperparams, result_path


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
    from benchmarks.harness.config import load_hyperparams

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


TINY = ["--env", "CartPole-v1", "--arms", "ppo", "--steps", "16", "--eval-episodes", "0"]


def _refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """Run crl-bench with ``args``: it must stop with exit code 2 and one error line, before any run."""
    with pytest.raises(SystemExit) as stop:
        main([*TINY, *args])
    err = capsys.readouterr().err
    assert stop.value.code == 2, err
    assert "Traceback" not in err and err.strip().splitlines()[-1].startswith("crl-bench: error: "), err
    assert not list((tmp_path / "r").rglob("*.json")) and not (tmp_path / "tb").exists()
    return err.strip().splitlines()[-1]


@pytest.mark.parametrize("text, why", [
    ("CartPole-v1:\n  n_envs: [1\n", "not valid YAML"),
    ("- 1\n- 2\n", "not a zoo-style hyperparameter file"),
    ("CartPole-v1: 3\n", "the block for 'CartPole-v1' is not a mapping"),
])
def test_a_broken_hyperparameter_file_is_refused_in_one_line(tmp_path, capsys, text, why):
    """Issue 24, case 16: a broken YAML (or one that is not a zoo file) is named before any run."""
    hp = tmp_path / "hp.yml"
    hp.write_text(text)
    assert why in _refused(tmp_path, capsys, "--results", str(tmp_path / "r"), "--hyperparams", str(hp))


def test_a_folder_given_as_the_hyperparameter_file_is_refused(tmp_path, capsys):
    (tmp_path / "hp").mkdir()
    line = _refused(tmp_path, capsys, "--results", str(tmp_path / "r"), "--hyperparams", str(tmp_path / "hp"))
    assert "cannot read hyperparameter file" in line and "a folder" in line


def test_an_override_that_is_not_yaml_is_refused(tmp_path, capsys):
    line = _refused(tmp_path, capsys, "--results", str(tmp_path / "r"), "--hyperparams", "n_envs:[")
    assert "n_envs:[" in line and "not valid YAML" in line


@pytest.mark.parametrize("seed", ["-1", str(2**32)])
def test_a_negative_or_too_large_seed_is_refused(tmp_path, capsys, seed):
    assert f"--seeds: {seed} is not in [0, 2**32 - 1]" in _refused(tmp_path, capsys, "--results", str(tmp_path / "r"),
                                                                    "--seeds", "0", seed)


@pytest.mark.parametrize("flag", ["--results", "--tensorboard"])
@pytest.mark.parametrize("where", ["afile", "afile/sub"])
def test_an_output_folder_that_is_a_file_is_refused_before_training(tmp_path, capsys, flag, where):
    (tmp_path / "afile").write_text("mine")
    args = [flag, str(tmp_path / where)] + (["--results", str(tmp_path / "r")] if flag != "--results" else [])
    line = _refused(tmp_path, capsys, *args)
    assert f"{flag} {tmp_path / where}" in line and f"{tmp_path / 'afile'} is a file" in line
    assert (tmp_path / "afile").read_text() == "mine"


@pytest.mark.parametrize("name", ["../../escape", "a/b", "..", " "])
def test_a_suite_name_that_would_leave_the_results_folder_is_refused(tmp_path, capsys, name):
    assert "--name is a folder name under --results" in _refused(tmp_path, capsys, "--results", str(tmp_path / "r"),
                                                                 "--name", name)
    assert not (tmp_path / "r").exists() and not (tmp_path.parent / "escape").exists()
