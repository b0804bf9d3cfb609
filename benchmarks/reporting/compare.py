"""The method against every other arm of a suite: bootstrap CIs of the differences.

For suites whose comparison arm is named in :data:`COMPARE_TO`, the report adds a table:
per other arm, the difference (method minus arm) of the mean final success and of the mean
AUC (the rolling success averaged over the run), each with a 95 % percentile-bootstrap
confidence interval over seeds (:func:`~benchmarks.reporting.stats.difference_ci`), and whether the
interval excludes zero.

    python -m benchmarks.reporting.compare --suite keyroom-20          # print the table
    python -m benchmarks.reporting.compare --suite trials-darkroom     # a trials suite: held-out metrics by condition
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from .results_reading import RESULTS, auc, load_results
from .stats import difference_ci

__all__ = ["COMPARE_TO", "comparison_lines"]

#: The arm each suite's other arms are compared with.
COMPARE_TO = {"keyroom-20": "crl-sil-obs", "keyroom-5": "crl-sil-obs-rollin", "keyroom-100": "crl-sil-obs",
              "medium-sil": "crl-sil-own", "keyroom-20-300k": "crl-sil-obs", "keyroom-rollin": "crl-sil-obs"}


def _cell(d: float, lo: float, hi: float) -> str:
    if not np.isfinite(d):
        return "n/a (a CI needs 2 seeds a side)"
    apart = "above 0" if lo > 0 else "below 0" if hi < 0 else "overlaps 0"
    return f"{d:+.2f} [{lo:+.2f}, {hi:+.2f}] ({apart})"


def comparison_lines(arms: dict[str, list[dict]], method: str) -> list[str]:
    """Markdown table: ``method`` minus each other arm, final success and AUC, with 95 % CIs."""
    if method not in arms:
        return []

    def finals(runs: list[dict]) -> list[float]:
        return [r["final_outcome"] for r in runs if r["final_outcome"] is not None]

    ref_final, ref_auc = finals(arms[method]), [auc(r) for r in arms[method]]
    lines = [f"**`{method}` minus each arm** (95 % bootstrap CI over seeds; `python -m benchmarks.reporting.compare`):", "",
             "| arm | seeds | final success: difference [CI] | AUC: difference [CI] |", "| --- | --- | --- | --- |"]
    for arm in sorted(a for a in arms if a != method):
        runs = arms[arm]
        lines.append(f"| {arm} | {len(runs)} | {_cell(*difference_ci(ref_final, finals(runs)))} | "
                     f"{_cell(*difference_ci(ref_auc, [auc(r) for r in runs]))} |")
    return [*lines, ""]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Bootstrap CIs of the method minus every other arm of a suite.")
    p.add_argument("--suite", required=True)
    p.add_argument("--method", help="the reference arm (default: the suite's in COMPARE_TO)")
    p.add_argument("--results", type=Path, default=RESULTS)
    args = p.parse_args(argv)
    from .trials_report import SUITES, comparison_table, load

    family = {suite: fam for fam, suite in SUITES.items()}.get(args.suite)
    if family is not None:  # a trials suite: held-out success by condition, the method against its peers
        arms = load(family, args.results)
        if not arms:
            p.error(f"no results for suite {args.suite!r} in {args.results}")
        print("\n".join(comparison_table(arms)) or "no arm to compare the method with")
        return 0
    method = args.method or COMPARE_TO.get(args.suite)
    if method is None:
        p.error(f"no reference arm for suite {args.suite!r}: give --method")
    results = load_results(args.results, [args.suite])
    if args.suite not in results:
        p.error(f"no results for suite {args.suite!r} in {args.results}")
    known = sorted({arm for arms in results[args.suite].values() for arm in arms})
    if method not in known:
        p.error(f"--method {method!r} has no results in suite {args.suite!r}; its arms: {known}")
    for env_id, arms in sorted(results[args.suite].items()):
        print(f"### {env_id}\n")
        print("\n".join(comparison_lines(arms, method)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
