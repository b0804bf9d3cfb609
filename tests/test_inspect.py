"""``python -m experience_wrappers.inspect``: a saved bank's summary and figures."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from experience_wrappers import ExperienceBank, Provenance
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
