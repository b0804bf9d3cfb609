"""``python -m experience_wrappers.inspect``: a saved bank's summary and figures."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from experience_wrappers import ExperienceBank
from experience_wrappers.bank import Provenance
from experience_wrappers.inspect import main, summarise


def small_bank(rng: np.random.Generator) -> ExperienceBank:
    bank = ExperienceBank(key_dim=4, value_dim=3)
    bank.add(rng.normal(size=(6, 4)), rng.normal(size=(6, 3)), utility=np.linspace(-1, 1, 6),
             task_ids=[0, 0, 0, 1, 1, 1])
    bank.add(rng.normal(size=(2, 4)) + 10, rng.normal(size=(2, 3)), utility=[0.5, 0.7],
             provenance=Provenance.DEMO)
    bank.query(rng.normal(size=(3, 4)), k=2)
    return bank


def test_summary_counts_provenance_tasks_and_retrievals(rng):
    s = summarise(small_bank(rng))
    assert s["size"] == 8 and s["provenance"]["demo"] == 2 and s["provenance"]["extracted"] == 6
    assert s["tasks"] == {0: 3 + 2, 1: 3}
    assert s["utility"]["max"] == pytest.approx(1.0) and s["utility_by_provenance"]["demo"]["min"] == 0.5
    assert s["retrievals"]["total"] > 0 and s["retrievals"]["never_retrieved"] < 8


def test_cli_prints_the_summary_and_writes_figures(rng, tmp_path, capsys):
    small_bank(rng).save(tmp_path / "run" / "bank")
    assert main([str(tmp_path / "run"), "--plot", str(tmp_path / "fig")]) == 0
    out = capsys.readouterr().out
    assert "8 entries" in out and "provenance: extracted 6, demo 2" in out and "entries per task: 0: 5, 1: 3" in out
    assert sorted(p.name for p in (tmp_path / "fig").iterdir()) == ["retrievals_vs_utility.png",
                                                                    "utility_by_provenance.png"]


def test_a_folder_without_a_bank_is_refused_clearly(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "experience_wrappers.inspect", str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "no saved bank in" in proc.stderr and "Traceback" not in proc.stderr


def test_a_run_of_one_snapshot_is_plotted_as_a_point_and_says_so(rng, tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from experience_wrappers.inspect import plot

    captured = {}
    real_savefig = plt.Figure.savefig

    def keep(fig, path, **kw):  # look at the figure as it is written
        captured[str(path).rsplit("/", 1)[-1]] = fig
        return real_savefig(fig, path, **kw)

    plt.Figure.savefig = keep
    try:
        plot(small_bank(rng), tmp_path, run={"bank_curve": [{"steps": 2048, "size": 8, "demo": {"n": 2}}]})
    finally:
        plt.Figure.savefig = real_savefig
    ax = captured["entries_over_training.png"].axes[0]
    assert "one snapshot" in ax.get_title() and "all envs" in ax.get_xlabel()
    assert all(line.get_marker() == "o" for line in ax.get_lines())  # a single point is drawn


def test_the_creation_step_is_labelled_as_each_env_counts_it(rng):
    from experience_wrappers.inspect import format_summary

    assert "the writing env's own step" in format_summary(summarise(small_bank(rng)))


def _break_meta_truncated(bank_dir):
    text = (bank_dir / "meta.json").read_text()
    (bank_dir / "meta.json").write_text(text[: len(text) // 2])


def _break_meta_newer(bank_dir):
    import json

    meta = json.loads((bank_dir / "meta.json").read_text())
    meta["version"] = 99
    (bank_dir / "meta.json").write_text(json.dumps(meta))


def _break_meta_nested(bank_dir):
    (bank_dir / "meta.json").write_text("[" * 100_000 + "]" * 100_000)


def _break_index(bank_dir):
    index = next(bank_dir.glob("index*"))
    index.write_bytes(b"\x00garbage" * (index.stat().st_size // 8 + 1))


def _entries_a_folder(bank_dir):
    entries = next(bank_dir.glob("entries*"))
    entries.unlink()
    entries.mkdir()


@pytest.mark.parametrize("damage", [_break_meta_truncated, _break_meta_newer, _break_meta_nested, _break_index,
                                    _entries_a_folder], ids=lambda f: f.__name__.strip("_"))
def test_a_damaged_bank_is_one_error_line(rng, tmp_path, capsys, damage):
    """Issue 24, case 17: whatever is wrong with the saved bank, one line saying so, exit code 2."""
    small_bank(rng).save(tmp_path / "bank")
    damage(tmp_path / "bank")
    with pytest.raises(SystemExit) as stop:
        main([str(tmp_path / "bank")])
    out, err = capsys.readouterr()
    assert stop.value.code == 2 and "Traceback" not in err and not out, err
    line = err.strip().splitlines()[-1]
    assert line.startswith("crl-inspect: error: cannot load experience bank from ") and str(tmp_path / "bank") in line


@pytest.mark.parametrize("run_text, why", [
    (None, "no such file"),
    ("{not json", "is not JSON"),
    ("[1, 2]", "is not a benchmark result (a JSON object)"),
    ('{"bank_curve": [{"x": 1}]}', "bank_curve"),
    ('{"bank_curve": 5}', "bank_curve"),
    ("folder", "is a folder"),
])
def test_a_bad_run_file_is_one_error_line_before_anything_is_written(rng, tmp_path, capsys, run_text, why):
    small_bank(rng).save(tmp_path / "bank")
    run = tmp_path / "run.json"
    if run_text == "folder":
        run.mkdir()
    elif run_text is not None:
        run.write_text(run_text)
    with pytest.raises(SystemExit) as stop:
        main([str(tmp_path / "bank"), "--plot", str(tmp_path / "fig"), "--run", str(run)])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "Traceback" not in err, err
    line = err.strip().splitlines()[-1]
    assert line.startswith(f"crl-inspect: error: --run {run}") and why in line, line
    assert not (tmp_path / "fig").exists()


@pytest.mark.parametrize("where", ["afile", "afile/sub"])
def test_a_plot_folder_that_is_a_file_is_one_error_line(rng, tmp_path, capsys, where):
    small_bank(rng).save(tmp_path / "bank")
    (tmp_path / "afile").write_text("mine")
    with pytest.raises(SystemExit) as stop:
        main([str(tmp_path / "bank"), "--plot", str(tmp_path / where)])
    out, err = capsys.readouterr()
    assert stop.value.code == 2 and "Traceback" not in err and not out, err
    line = err.strip().splitlines()[-1]
    assert line.startswith(f"crl-inspect: error: --plot {tmp_path / where}: {tmp_path / 'afile'} is a file"), line
    assert (tmp_path / "afile").read_text() == "mine"


def test_a_run_file_without_plot_is_refused(rng, tmp_path, capsys):
    small_bank(rng).save(tmp_path / "bank")
    with pytest.raises(SystemExit) as stop:
        main([str(tmp_path / "bank"), "--run", str(tmp_path / "run.json")])
    assert stop.value.code == 2 and "--run needs --plot" in capsys.readouterr().err


def test_a_saved_run_and_its_experience_folder_lead_to_the_bank_inside(tmp_path, capsys):
    """Issue 36, case 16: save_crl's folder and its experience/ have a meta.json of their own (a run's,
    a manager's); the bank inside is found, not refused for its format."""
    import gymnasium as gym
    from stable_baselines3 import PPO

    from experience_wrappers import ExperienceWrapper
    from integrations.sb3 import CRLCallback, ExperiencePolicy, crl_policy_kwargs, save_crl

    env = ExperienceWrapper(gym.make("CartPole-v1"), ExperienceBank(seed=0))
    model = PPO(ExperiencePolicy, env, policy_kwargs=crl_policy_kwargs(), n_steps=64, batch_size=32, seed=0)
    model.learn(128, callback=CRLCallback())
    save_crl(tmp_path / "run", model)
    for where in (tmp_path / "run", tmp_path / "run" / "experience"):
        assert main([str(where)]) == 0
        out = capsys.readouterr().out
        assert out.startswith(f"bank {tmp_path / 'run' / 'experience' / 'bank'}: ") and "entries" in out
