"""benchmarks/reporting/compare.py and stats.difference_ci: the method-minus-arm table."""

from __future__ import annotations

from benchmarks.reporting.compare import comparison_lines
from benchmarks.reporting.stats import difference_ci


def _run(final: float, level: float) -> dict:
    curve = [{"steps": s, "outcome": level} for s in (1000, 2000, 3000)]
    return {"final_outcome": final, "curve": curve}


def test_difference_ci_brackets_the_difference_and_says_when_it_is_apart_from_zero() -> None:
    d, lo, hi = difference_ci([0.9, 1.0, 0.95, 0.92], [0.1, 0.0, 0.05, 0.2])
    assert lo <= d <= hi and lo > 0
    d, lo, hi = difference_ci([0.0, 1.0, 0.0, 1.0], [1.0, 0.0, 1.0, 0.0])
    assert d == 0 and lo < 0 < hi
    assert all(x != x for x in difference_ci([1.0], [0.0, 1.0]))  # NaN with one value


def test_comparison_table_has_a_row_per_other_arm_with_the_sign_of_its_interval() -> None:
    arms = {"method": [_run(0.9, 0.7), _run(1.0, 0.8), _run(0.95, 0.75)],
            "peer": [_run(0.1, 0.1), _run(0.2, 0.1), _run(0.0, 0.05)],
            "twin": [_run(0.9, 0.7), _run(1.0, 0.8), _run(0.95, 0.75)]}
    lines = comparison_lines(arms, "method")
    rows = {line.split("|")[1].strip(): line for line in lines if line.startswith("| ") and "---" not in line}
    assert set(rows) == {"arm", "peer", "twin"}
    assert rows["peer"].count("(above 0)") == 2
    assert rows["twin"].count("+0.00 [") == 2 and rows["twin"].count("(overlaps 0)") == 2
    assert comparison_lines(arms, "absent") == []
