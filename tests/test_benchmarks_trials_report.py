"""The trials report: tables, comparisons and the README block, from result files written here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.reporting.trials_report import (
    comparison_table,
    headline,
    load,
    metric,
    replace_block,
    trials_section,
)


def write(root: Path, arm: str, seed: int, with_exp: list[float] | None, without: list[float],
          train_instances: int = 79) -> None:
    def cond(s: list[float]) -> dict:
        cum = [max(s[: i + 1]) for i in range(len(s))]
        return {"success_by_trial": s, "cumulative_by_trial": cum, "after_first_success": 1.0, "runs": 100}
    heldout = {"instances": 20, "trials": 4, "without_experience": cond(without)}
    if with_exp is not None:
        heldout["with_experience"] = cond(with_exp)
    res = {"suite": "trials-darkroom", "task": "T", "arm": arm, "seed": seed, "steps": 1000, "trials": 4,
           "train_instances": train_instances, "heldout_instances": list(range(20)), "train": {}, "heldout": heldout}
    path = root / "trials-darkroom" / arm / f"seed{seed}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(res))


def test_tables_and_comparisons(tmp_path: Path) -> None:
    for seed in range(3):
        write(tmp_path, "crl-trials", seed, [0.2, 0.9, 0.9, 0.95 + 0.01 * seed], [0.2, 0.2, 0.2, 0.2])
        write(tmp_path, "ppo", seed, None, [0.2, 0.2, 0.2, 0.2 + 0.01 * seed])
    arms = load("darkroom", tmp_path)
    assert list(arms) == ["crl-trials", "ppo"] and [r["seed"] for r in arms["ppo"]] == [0, 1, 2]
    assert metric(arms["ppo"][0], "with_experience", "trial1") != metric(arms["ppo"][0], "with_experience", "trial1")
    first = arms["crl-trials"][0]
    assert [metric(first, "with_experience", f"cumulative@{n}") for n in (1, 2, 4)] == [0.2, 0.9, 0.95]
    assert metric(first, "with_experience", "cumulative@K") == 0.95
    comp = comparison_table(arms)
    ppo_row = next(line for line in comp if line.startswith("| ppo"))
    assert "above" in ppo_row  # cumulative 0.96 against 0.21, every seed
    text = "\n".join(trials_section(tmp_path))
    assert "trials-darkroom" in text and "0.20 / 0.90 / 0.90 / 0.96" in text
    assert "trained on 79 instances" in text
    write(tmp_path, "crl-trials-more", 0, [0.3] * 4, [0.2] * 4, train_instances=500)
    assert "trained on 79 (but `crl-trials-more` on 500) instances" in "\n".join(trials_section(tmp_path))
    head = headline(tmp_path)
    assert head[2].startswith("| crl-trials | 3 |") and "n/a" in head[3]  # ppo has no demonstration condition


def test_replace_block_keeps_what_is_outside() -> None:
    text = "a\n<!-- s -->\nold\n<!-- e -->\nb"
    assert replace_block(text, "<!-- s -->", "<!-- e -->", ["new"]) == "a\n<!-- s -->\nnew\n<!-- e -->\nb"
    assert replace_block("no markers", "<!-- s -->", "<!-- e -->", ["new"]) == "no markers"


def test_the_goal_plan_is_four_legal_trials_that_cover_every_goal_cell():
    from benchmarks.studies.trials_bounds import GOAL_PLAN
    from integrations.minihack.hidden_goal import MOVES

    seen: set[tuple[int, int]] = set()
    for path in GOAL_PLAN:
        assert len(path) <= 25
        pos = (0, 0)
        for cell in path:
            assert (cell[0] - pos[0], cell[1] - pos[1]) in MOVES and 0 <= min(cell) and max(cell) < 10
            pos = cell
        seen |= set(path)
    assert seen - {(0, 0)} == {(x, y) for x in range(10) for y in range(10)} - {(0, 0)}


def test_the_greedy_key_door_explorer_uses_its_memory():
    from benchmarks.studies.trials_bounds import key_door_greedy

    # the key and the door at the far corners: not within one 30-step trial from scratch, but once
    # the key is known the next trial walks straight to it
    assert key_door_greedy((6, 6), (6, 0)) <= 4
    assert key_door_greedy((1, 0), (2, 0)) == 1


def test_an_eval_search_file_gives_the_same_weights_without_the_search_a_row_and_a_comparison(tmp_path: Path) -> None:
    from benchmarks.reporting.trials_report import NO_SEARCH

    arm = "crl-trials-located-noentries-relocate-evalsearch-noimitate-bonus-inf"
    for seed in range(2):
        write(tmp_path, arm, seed, [0.6, 0.8, 0.9, 0.9], [0.2, 0.2, 0.2, 0.2])
        path = tmp_path / "trials-darkroom" / arm / f"seed{seed}.json"
        res = json.loads(path.read_text())
        without = [0.4, 0.6, 0.7, 0.7]
        res["heldout_without_search"] = {"with_experience": {
            "success_by_trial": without, "cumulative_by_trial": without, "after_first_success": 1.0}}
        path.write_text(json.dumps(res))
    arms = load("darkroom", tmp_path)
    assert list(arms) == [arm, arm + NO_SEARCH]
    assert metric(arms[arm][0], "with_experience", "trial1") == 0.6
    assert metric(arms[arm + NO_SEARCH][1], "with_experience", "trial1") == 0.4
    assert "without_experience" not in arms[arm + NO_SEARCH][0]["heldout"]  # only what was evaluated without it
    text = "\n".join(trials_section(tmp_path, families=("darkroom",)))
    assert f"| {arm + NO_SEARCH} |" in text and "+0.20" in text  # the row, and trial 1's paired difference


def test_kept_runs_pair_the_two_evaluations_by_held_out_instance(tmp_path: Path) -> None:
    import numpy as np
    import pytest

    from benchmarks.reporting.paired_runs import instance_metric, paired_difference
    from benchmarks.reporting.trials_report import NO_SEARCH

    arm = "crl-trials-located-noentries-relocate-evalsearch-noimitate-bonus-inf"
    rng = np.random.default_rng(0)
    for seed in range(2):
        write(tmp_path, arm, seed, [0.6, 0.8, 0.9, 0.9], [0.2, 0.2, 0.2, 0.2])
        path = tmp_path / "trials-darkroom" / arm / f"seed{seed}.json"
        res = json.loads(path.read_text())
        # 20 instances x 2 repeats; without the search each run's first trial is its with-search one, but
        # for the first repeat of instances 0-4, which fail: trial 1 drops by 5 / 40 runs exactly
        runs = rng.integers(0, 2, size=(40, 4))
        runs[:10:2, 0] = 1
        without = runs.copy()
        without[:10:2, 0] = 0
        res["heldout"]["with_experience"]["successes"] = runs.tolist()
        res["heldout_without_search"] = {"with_experience": {
            "success_by_trial": [0.4, 0.6, 0.7, 0.7], "cumulative_by_trial": [0.4, 0.6, 0.7, 0.7],
            "after_first_success": 1.0, "successes": without.tolist()}}
        path.write_text(json.dumps(res))
    arms = load("darkroom", tmp_path)
    d, lo, hi, pairs, seeds = paired_difference(arms[arm], arms[arm + NO_SEARCH], "with_experience",
                                                "with_experience", "trial1")
    assert (round(d, 3), pairs, seeds) == (0.125, 40, [0, 1]) and 0 < lo < d < hi
    text = "\n".join(trials_section(tmp_path, families=("darkroom",)))
    assert "paired by held-out instance" in text and "| trial1 (with experience) | +0.12 [" in text
    # after_first_success is a rate over the trials after a success, not a per-run figure: never paired
    assert "after_first_success (with experience) | +" not in text.split("paired by held-out instance")[1]
    # a seed whose files did not keep their runs is left out; none at all: no pairs
    del arms[arm][1]["heldout"]["with_experience"]["successes"]
    assert paired_difference(arms[arm], arms[arm + NO_SEARCH], "with_experience", "with_experience",
                             "trial1")[3:] == (20, [0])
    assert paired_difference(arms[arm], arms[arm], "without_experience", "without_experience", "trial1") is None
    assert instance_metric([[0, 1, 0], [1, 0, 0]], 1, "cumulative@2").tolist() == [1.0]
    with pytest.raises(ValueError, match="not a per-run metric"):
        instance_metric([[0, 1]], 1, "after_first_success")
    with pytest.raises(ValueError, match=r"cumulative@9: the runs hold trials 1 to 2"):
        instance_metric([[0, 1]], 1, "cumulative@9")
    arms[arm + NO_SEARCH][0]["heldout_instances"] = list(range(1, 21))  # other instances: not the same runs
    assert paired_difference(arms[arm], arms[arm + NO_SEARCH], "with_experience", "with_experience",
                             "trial1") is None
    with pytest.raises(ValueError, match="do not split into 2"):
        instance_metric([[0, 1], [1, 1], [0, 0]], 2, "trial1")


def test_the_report_reads_a_trials_out_folder_and_names_a_damaged_file(tmp_path: Path, capsys) -> None:
    from benchmarks.reporting.trials_report import main

    write(tmp_path, "ppo", 0, None, [0.2, 0.2, 0.2, 0.3])
    folder = tmp_path / "trials-darkroom"  # what `benchmarks.suites.trials --out DIR` fills: DIR/<arm>/seed<k>.json
    assert main(["--family", "darkroom", "--folder", str(folder)]) == 0
    assert "0.20 / 0.20 / 0.20 / 0.30" in capsys.readouterr().out
    (folder / "ppo" / "seed1.json").write_text("{damaged")
    with pytest.raises(SystemExit):
        main(["--family", "darkroom", "--folder", str(folder)])
    assert "seed1.json is not a result file" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--family", "bogus"])
    assert "invalid choice: 'bogus'" in capsys.readouterr().err


def test_the_trials_command_stops_at_a_damaged_result_file_naming_it(tmp_path: Path, capsys) -> None:
    from benchmarks.suites.trials import main

    (tmp_path / "ppo").mkdir()
    (tmp_path / "ppo" / "seed0.json").write_text("[1, 2]")
    assert main(["--family", "darkroom", "--arms", "ppo", "--out", str(tmp_path)]) == 2
    assert "seed0.json is not a result file" in capsys.readouterr().err
