"""The smaller benchmark commands refuse bad arguments in one line (argparse's exit 2), before any work."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest


def _refused(main: Callable[[list[str]], Any], args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as stop:
        main(args)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "Traceback" not in err, err
    return err.strip().splitlines()[-1]


@pytest.mark.parametrize("args, match", [(["--rounds", "-1"], "--rounds must be positive"),
                                         (["--steps", "0"], "--steps must be positive")])
def test_wrapper_cost(args: list[str], match: str, capsys, tmp_path: Path) -> None:
    from benchmarks.perf.wrapper_cost import main

    assert match in _refused(main, [*args, "--out", str(tmp_path / "w.json")], capsys)
    assert not (tmp_path / "w.json").exists()


@pytest.mark.parametrize("args, match", [(["--episodes", "0"], "--episodes must be positive"),
                                         (["--seed", "-1"], "--seeds"),
                                         (["--env", "MiniHack-Room-5x5-v0", "--out", "afile/demos"], "is a file")])
def test_make_demos(args: list[str], match: str, capsys, tmp_path: Path, monkeypatch) -> None:
    from benchmarks.suites.make_demos import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("mine")
    assert match in _refused(main, args, capsys)
    assert (tmp_path / "afile").read_text() == "mine"


def test_equivalence_compare_of_a_file_that_is_not_there(capsys, tmp_path: Path) -> None:
    from benchmarks.harness.equivalence import main

    (tmp_path / "a.json").write_text(json.dumps([]))
    assert "--compare reads two fingerprint files" in _refused(
        main, ["--compare", str(tmp_path / "a.json"), str(tmp_path / "missing.json")], capsys)


def test_compare_with_a_method_the_suite_does_not_have(capsys, tmp_path: Path) -> None:
    from benchmarks.reporting.compare import main

    for arm in ("ppo", "crl"):
        path = tmp_path / "S" / "CartPole-v1" / arm / "seed0.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps({"suite": "S", "env_id": "CartPole-v1", "arm": arm, "seed": 0,
                                    "final_success": 0.5, "curve": []}))
    assert "--method 'bogus' has no results in suite 'S'" in _refused(
        main, ["--suite", "S", "--results", str(tmp_path), "--method", "bogus"], capsys)


def test_blas_threads_refuses_a_batch_of_none_and_times_both_settings(capsys, tmp_path: Path) -> None:
    from benchmarks.perf.blas_threads import main
    from experience_wrappers.manager.threads import blas_threads

    assert "--batch, --calls and --rounds must be positive" in _refused(main, ["--batch", "0"], capsys)
    if blas_threads() is None:
        pytest.skip("numpy's BLAS has no thread pool here")
    out = main(["--calls", "3", "--rounds", "2", "--pause-ms", "0", "--out", str(tmp_path / "b.json")])
    assert len(out["summary"]) == 2 and all(row["calls"] == 6 for row in out["summary"].values())
    assert json.loads((tmp_path / "b.json").read_text())["summary"] == out["summary"]
