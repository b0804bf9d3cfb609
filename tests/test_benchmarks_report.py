"""The benchmark report: per-run summaries and the generated page, on synthetic result files."""

from __future__ import annotations

import json
import math

import pytest

from benchmarks.reporting.report import guided_gap, interval_eval_lines, main


def result(arm: str, seed: int, final: float, guided_ratio: float | None = None, eval_curve=None) -> dict:
    curve = [{"steps": 1024 * (i + 1), "episodes": 100 + 10 * i, "outcome": final, "guided": g, "free": f,
              "wall_s": float(i)} for i, (g, f) in enumerate([(0.5, 0.4), (0.9, 0.6), (None, 0.7)])]
    return {"env_id": "Toy-v0", "arm": arm, "seed": seed, "total_steps": 3072, "uses_success": True,
            "first_reached": {"0.9": 2048 if final >= 0.9 else None}, "final_outcome": final, "curve": curve,
            "evaluation": {"without_experience": {"success": final}}, "steps_per_s": 100.0, "wall_s": 30.7,
            "arm_config": {"callback": {} if guided_ratio is None else {"guided_ratio": guided_ratio}},
            **({"eval_curve": eval_curve} if eval_curve else {})}


def test_guided_gap_averages_the_points_with_both_rates():
    assert guided_gap(result("crl", 0, 1.0)) == (0.1 + 0.3) / 2
    assert math.isnan(guided_gap(result("crl-all-guided", 0, 1.0, guided_ratio=1.0)))


def test_interval_evaluation_table_only_when_runs_have_it():
    assert interval_eval_lines({"ppo": [result("ppo", 0, 1.0)]}) == []
    curve = [{"steps": 1000, "with_experience": {"success": 0.5}, "without_experience": {"success": 0.25}}]
    lines = interval_eval_lines({"crl": [result("crl", s, 1.0, eval_curve=curve) for s in range(2)]})
    assert "| crl | 1k | 2 | 0.50 ± 0.00 | 0.25 ± 0.00 |" in lines


def test_main_writes_the_page_the_figures_and_the_readme_headline(tmp_path):
    root = tmp_path / "results"
    for suite, arm, final in (("easy", "ppo", 0.8), ("easy", "crl", 0.95), ("stretch", "ppo", 0.0),
                              ("stretch", "crl-demos", 0.2), ("stretch", "crl-all3", 0.1)):
        for seed in range(2):
            path = root / suite / "Toy-v0" / arm / f"seed{seed}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(result(arm, seed, final + 0.01 * seed)))
    readme = tmp_path / "README.md"
    readme.write_text("intro\n<!-- headline:start -->\nold\n<!-- headline:end -->\nrest\n")
    out = tmp_path / "docs" / "benchmarks.md"
    text = main(["--results", str(root), "--out", str(out), "--readme", str(readme), "--overhead", "--targets"])
    assert out.read_text() == text
    assert (tmp_path / "docs" / "figures" / "easy_Toy-v0.png").stat().st_size > 0
    assert "| easy | Toy-v0 | steps to 90 % <= 0.6x PPO's |" in text  # the targets table
    head = readme.read_text()
    assert "\nold\n" not in head and head.startswith("intro\n") and head.endswith("rest\n")
    assert "| easy | Toy-v0 | crl | 2 | 0.95 ± 0.01 | 90%: 2.0k" in head
    assert "| stretch | Toy-v0 | crl-demos | 2 | 0.2" in head  # the suite's method arm
    assert "| stretch | Toy-v0 | crl-all3 |" not in head
    assert "Targets of the benchmarks issue met: **" in head and "undecided: easy: steps to 90 % <= 0.6x PPO's." in head


def test_a_report_elsewhere_writes_only_there_and_holds_only_the_users_tables(tmp_path, capsys):
    from benchmarks.reporting.report import ANALYSIS, README

    root = tmp_path / "results"
    for arm, final in (("ppo", 0.5), ("crl", 0.76)):
        run = result(arm, 0, final)
        run["uses_success"], run["first_reached"] = False, {"return:237.5": 2048, "return:475": None}
        run["evaluation"] = {"without_experience": {"return": 300.0}}
        path = root / "my-env" / "Toy-v0" / arm / "seed0.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(run))
    readme_before, analysis = README.read_text(), ANALYSIS.read_text().strip().splitlines()[0]
    out = tmp_path / "elsewhere" / "report.md"
    text = main(["--results", str(root), "--out", str(out), "--overhead"])
    assert README.read_text() == readme_before  # the repository's README is left alone
    assert analysis not in text and "Targets of the benchmarks issue" not in text
    assert "## Suite `my-env`" in text  # the runs are filed under their own suite
    assert "steps to return 237.5" in text and "steps to return 475" not in text  # a return threshold
    assert sorted(p.name for p in out.parent.rglob("*") if p.is_file()) == ["my-env_Toy-v0.png", "report.md"]
    assert "README" not in capsys.readouterr().out
    # without --out, a report of the user's results goes beside them, never over the project's pages
    from benchmarks.reporting.report import DOCS

    pages = {p: p.read_text() for p in DOCS.glob("*.md")}
    text = main(["--results", str(root), "--overhead"])
    assert (root / "report.md").read_text() == text
    assert {p: p.read_text() for p in DOCS.glob("*.md")} == pages


def test_a_damaged_result_file_is_named(tmp_path, capsys):
    path = tmp_path / "results" / "easy" / "Toy-v0" / "ppo" / "seed0.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"env_id": ')
    with pytest.raises(ValueError, match=r"seed0.json is not a result file"):
        main(["--results", str(tmp_path / "results"), "--out", str(tmp_path / "r.md"), "--overhead"])


@pytest.mark.parametrize(("args", "says"), [
    (["--analysis", "none.md"], "no such file: --analysis none.md"),
    (["--overhead", "none.json"], "no such file: --overhead none.json"),
    (["--suites", "nope"], "--suites: no results of ['nope']"),
    (["--out", "results"], "--out results: a folder, not a file")])
def test_the_report_refuses_what_it_would_have_ignored(tmp_path, monkeypatch, capsys, args, says):
    (tmp_path / "results" / "easy" / "Toy-v0" / "ppo").mkdir(parents=True)
    (tmp_path / "results" / "easy" / "Toy-v0" / "ppo" / "seed0.json").write_text(json.dumps(result("ppo", 0, 0.5)))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stop:
        main(["--results", "results", "--out", "report.md", *args])
    assert stop.value.code == 2 and says in capsys.readouterr().err
    assert not (tmp_path / "report.md").exists()


def test_the_projects_readme_is_refreshed_only_from_the_projects_results(tmp_path, capsys):
    from benchmarks.reporting.report import README

    path = tmp_path / "results" / "easy" / "Toy-v0" / "ppo" / "seed0.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(result("ppo", 0, 0.5)))
    before = README.read_text()
    with pytest.raises(SystemExit) as stop:
        main(["--results", str(tmp_path / "results"), "--readme"])
    assert stop.value.code == 2 and "--readme refreshes the project's README" in capsys.readouterr().err
    assert README.read_text() == before
