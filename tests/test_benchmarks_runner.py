"""The benchmark runner: one result file per run, resumable, safe beside another runner."""

from __future__ import annotations

import json

import pytest

from benchmarks.harness.runner import _one, main, result_path


@pytest.mark.slow
def test_smoke_suite_writes_one_file_per_run_and_resumes(tmp_path, capsys):
    args = ["--suite", "smoke", "--results", str(tmp_path), "--steps", "1024", "--eval-episodes", "2",
            "--eval-every", "512"]
    assert main(args) == 0
    for arm in ("ppo", "crl"):
        res = json.loads(result_path(tmp_path, "smoke", "CartPole-v1", arm, 0).read_text())
        assert res["arm"] == arm and res["seed"] == 0 and res["total_steps"] >= 1024
        assert res["curve"] and res["steps_per_s"] > 0 and res["versions"]["commit"]
        assert [h["steps"] for h in res["eval_curve"]] == [512, 1024]
        assert ("with_experience" in res["evaluation"]) == (arm == "crl")
        assert res["eval_s"] > 0 and res["wall_s"] > 0
        assert res["command"].startswith("python -m benchmarks.harness.runner --suite smoke")
    out = capsys.readouterr().out
    # the end: a table of what ran (one seed: no "± 0.00") and the command that makes the report
    assert any(line.startswith("CartPole-v1") and " crl " in line and "±" not in line for line in out.splitlines())
    assert "report: python -m benchmarks.reporting.report --results" in out
    assert main(args) == 0
    assert "0 runs to do" in capsys.readouterr().out
    # other settings: stop before training, say what differs and how to proceed
    before = result_path(tmp_path, "smoke", "CartPole-v1", "ppo", 0).read_text()
    assert main([*args[:5], "2048", *args[6:]]) == 2
    err = capsys.readouterr().err
    assert "steps: 1024 -> 2048" in err and "--force" in err and "--name NEW" in err
    assert result_path(tmp_path, "smoke", "CartPole-v1", "ppo", 0).read_text() == before


def test_a_run_whose_file_appeared_meanwhile_is_skipped(tmp_path):
    path = tmp_path / "seed0.json"
    path.write_text("{}")
    assert _one({"path": str(path)}) == (str(path), "skipped", None)
    assert path.read_text() == "{}"


def test_a_run_that_replaces_a_result_is_not_skipped_for_the_file_it_replaces(tmp_path):
    """--force keeps the old file until the new one replaces it (a rerun stopped on the way leaves it)."""
    path = tmp_path / "seed0.json"
    path.write_text("{}")
    job = {"path": str(path), "env_id": "NoSuchEnv-v9", "arm": "ppo", "seed": 0, "hyper": {"n_envs": 1},
           "steps": 8, "eval_episodes": 0, "eval_every": 0, "replace": True}
    assert _one(job)[1] == "failed"  # it ran (and failed: the env does not exist)
    assert path.read_text() == "{}"  # the old result stays


def test_what_would_go_wrong_is_said_before_detaching_and_a_damaged_result_is_named(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--env", "CartPole-v1", "--background", "--arms", "nope", "--results", str(tmp_path)])
    assert stop.value.code == 2 and "unknown arms" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())  # no log folder, nothing detached
    damaged = result_path(tmp_path, "smoke", "CartPole-v1", "ppo", 0)
    damaged.parent.mkdir(parents=True)
    damaged.write_text('{"arm": ')
    with pytest.raises(SystemExit):
        main(["--suite", "smoke", "--arms", "ppo", "--results", str(tmp_path)])
    assert "seed0.json is not a result file" in capsys.readouterr().err


def test_an_interval_evaluation_of_no_episodes_is_refused(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["--suite", "smoke", "--eval-every", "500", "--eval-episodes", "0", "--results", str(tmp_path)])
    assert "--eval-every 500 evaluates 0 episodes" in capsys.readouterr().err


def test_an_arm_or_seed_named_twice_runs_once(tmp_path, capsys):
    with pytest.raises(SystemExit):  # (refused after the de-duplication: the arms it names once)
        main(["--suite", "smoke", "--arms", "nope", "nope", "--results", str(tmp_path)])
    assert "unknown arms ['nope']" in capsys.readouterr().err


def test_a_failing_run_reports_its_traceback(tmp_path):
    job = {"path": str(tmp_path / "x.json"), "env_id": "NoSuchEnv-v9", "arm": "ppo", "seed": 0,
           "hyper": {"n_envs": 1}, "steps": 8, "eval_episodes": 0, "eval_every": 0}
    path, status, err = _one(job)
    assert status == "failed" and "NoSuchEnv" in err
    assert not (tmp_path / "x.json").exists()


@pytest.mark.parametrize("flag, value", [("--steps", "-5"), ("--steps", "0"), ("--eval-episodes", "-1"),
                                         ("--jobs", "0")])
def test_nonsense_budgets_are_refused_before_any_run(tmp_path, capsys, flag, value):
    with pytest.raises(SystemExit):
        main(["--suite", "smoke", "--results", str(tmp_path), flag, value])
    assert flag in capsys.readouterr().err and not any(tmp_path.iterdir())


def test_unknown_arm_is_refused(tmp_path):
    with pytest.raises(SystemExit):
        main(["--suite", "smoke", "--arms", "nope", "--results", str(tmp_path)])


def test_an_env_without_hyperparameters_is_refused_with_the_file_named(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["--suite", "smoke", "--envs", "Acrobot-v1", "--results", str(tmp_path)])
    assert "no hyperparameters for 'Acrobot-v1'" in capsys.readouterr().err


@pytest.mark.slow
def test_any_env_runs_with_a_user_hyperparameter_file(tmp_path):
    hp = tmp_path / "ppo.yml"
    hp.write_text("Acrobot-v1:\n  n_envs: 2\n  n_steps: 64\n  batch_size: 64\n  n_epochs: 1\n")
    assert main(["--suite", "smoke", "--envs", "Acrobot-v1", "--arms", "crl", "--steps", "256",
                 "--eval-episodes", "0", "--hyperparams", str(hp), "--results", str(tmp_path)]) == 0
    res = json.loads(result_path(tmp_path, "smoke", "Acrobot-v1", "crl", 0).read_text())
    assert res["uses_success"] is False and res["hyperparameters"]["n_envs"] == 2


def test_the_no_experience_control_never_guides_an_episode(tmp_path):
    assert main(["--suite", "smoke", "--arms", "crl-no-experience", "--steps", "1024", "--eval-episodes", "0",
                 "--results", str(tmp_path)]) == 0
    res = json.loads(result_path(tmp_path, "smoke", "CartPole-v1", "crl-no-experience", 0).read_text())
    assert all(c["guided"] is None for c in res["curve"])
    assert any(c["free"] is not None for c in res["curve"])


def _keyroom_run(arm_name: str, total_steps: int, **changes: object) -> dict:
    """A tiny KeyRoom-S5 run of ``arm_name`` (with ``changes``) with 3 scripted demonstrations."""
    pytest.importorskip("minihack")
    import attrs

    from benchmarks.harness.run import train_run
    from benchmarks.suites.arms import ARMS

    arm = attrs.evolve(ARMS[arm_name], demonstrations=3, **changes)
    hyper = {"n_envs": 2, "n_steps": 64, "batch_size": 64, "n_epochs": 1}
    return train_run("MiniHack-KeyRoom-S5-v0", arm, 0, hyper, total_steps=total_steps)


@pytest.mark.slow
def test_an_arm_with_demonstrations_fills_the_bank_before_training():
    res = _keyroom_run("crl-sil-obs", 128)
    demos = res["demonstrations"]
    assert demos["episodes"] == 3 and demos["segments"] >= 3 and demos["bank_size"] >= 1
    assert res["arm_config"]["demonstrations"] == 3


@pytest.mark.slow
def test_an_arm_that_does_not_learn_keeps_the_agents_episodes_out_of_the_bank():
    res = _keyroom_run("crl-sil-obs", 512, wrapper={"learn": False})
    assert res["episodes"] >= 2  # KeyRoom episodes end by 200 steps, so some were finished
    assert res["crl"]["manager"]["episodes_submitted"] == 0
    assert res["crl"]["bank"]["size"] <= res["demonstrations"]["bank_size"]  # merges may fold some


def test_demonstrations_on_an_env_without_a_script_are_refused():
    import attrs

    from benchmarks.harness.run import train_run
    from benchmarks.suites.arms import ARMS

    arm = attrs.evolve(ARMS["crl-sil-obs"], demonstrations=3)
    with pytest.raises(ValueError, match="no scripted demonstrator"):
        train_run("CartPole-v1", arm, 0, {"n_envs": 1, "n_steps": 64, "batch_size": 64}, total_steps=64)


def test_the_summary_names_an_unreadable_result_instead_of_failing(tmp_path):
    from benchmarks.harness.runner import summary_lines

    damaged = tmp_path / "seed0.json"
    damaged.write_text('{"arm": ')
    assert summary_lines([damaged])[-1] == f"unreadable (not a result file): {damaged}"
