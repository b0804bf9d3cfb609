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
