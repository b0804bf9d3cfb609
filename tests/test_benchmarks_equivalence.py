"""The equivalence harness's comparisons: fingerprint files, and an arm's seeds rerun on new code."""

from __future__ import annotations

import json

from benchmarks.harness.equivalence import compare_runs, main


def _seeds(folder, finals):
    folder.mkdir(parents=True)
    for seed, final in enumerate(finals):
        curve = [{"steps": s, "outcome": final * s / 2000} for s in (0, 1000, 2000)]
        (folder / f"seed{seed}.json").write_text(json.dumps({"final_outcome": final, "curve": curve}))


def test_a_rerun_within_the_published_spread_is_within_and_a_worse_one_is_not(tmp_path):
    _seeds(tmp_path / "old", [0.9, 0.95, 1.0, 0.8, 0.75])
    _seeds(tmp_path / "same", [0.85, 0.97, 0.95, 0.82, 0.8])
    _seeds(tmp_path / "worse", [0.1, 0.15, 0.05, 0.2, 0.1])
    same = compare_runs(str(tmp_path / "old"), str(tmp_path / "same"))
    assert same["within"] and same["seeds"] == {"before": [0, 1, 2, 3, 4], "after": [0, 1, 2, 3, 4]}
    assert abs(same["final"]["difference"] - (0.878 - 0.88)) < 1e-9
    worse = compare_runs(str(tmp_path / "old"), str(tmp_path / "worse"))
    assert not worse["within"] and worse["final"]["ci"][1] < 0 and worse["auc"]["difference"] < 0
    out = tmp_path / "cmp.json"
    assert main(["--compare-runs", str(tmp_path / "old"), str(tmp_path / "worse"), "--out", str(out)]) == 1
    assert json.loads(out.read_text())["within"] is False


def test_fingerprints_that_differ_only_in_a_field_one_file_lacks_compare_identical(tmp_path, capsys):
    row = {"env_id": "E", "arm": "a", "episodes": 3, "weights_digest": "x"}
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps([row]))
    b.write_text(json.dumps([{**row, "weights_values_digest": "y"}]))
    assert main(["--compare", str(a), str(b)]) == 0 and "identical" in capsys.readouterr().out
    b.write_text(json.dumps([{**row, "episodes": 4}]))
    assert main(["--compare", str(a), str(b)]) == 1 and "DIFFERS: episodes" in capsys.readouterr().out


def _trial_seeds(folder, cumulative, after_first):
    folder.mkdir(parents=True)
    for seed, (c, a) in enumerate(zip(cumulative, after_first, strict=True)):
        held = {"with_experience": {"cumulative_by_trial": [c / 2, c], "after_first_success": a}}
        (folder / f"seed{seed}.json").write_text(json.dumps({"heldout": held, "train": None}))


def test_a_trials_rerun_is_compared_on_its_held_out_figures(tmp_path):
    _trial_seeds(tmp_path / "old", [0.5, 0.55, 0.45], [0.9, 0.95, 0.92])
    _trial_seeds(tmp_path / "new", [0.1, 0.12, 0.08], [0.93, 0.9, 0.95])
    res = compare_runs(str(tmp_path / "old"), str(tmp_path / "new"))
    assert res["metrics"] == ["final", "after_first_success"] and "auc" not in res
    assert res["final"]["before"] == [0.5, 0.55, 0.45] and not res["within"]
    assert res["after_first_success"]["ci"][0] <= 0 <= res["after_first_success"]["ci"][1]
