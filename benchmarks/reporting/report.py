"""Turn benchmark result files into ``docs/benchmarks.md`` and PNG learning curves.

Run::

    python -m benchmarks.reporting.report                    # every suite under benchmarks/results/ -> docs/benchmarks.md
    python -m benchmarks.reporting.report --suites easy ways
    python -m benchmarks.reporting.report --readme           # also refresh the README's headline table
    python -m benchmarks.reporting.report --results my-results --out my-report.md   # a report of your own runs

A report written elsewhere than ``docs/benchmarks.md`` holds only your tables and figures
(next to it, in ``figures/``): the project's analysis and its targets come only with
``--analysis PATH`` and ``--targets``, and nothing else is written unless asked.

For each suite and task: per arm, the number of seeds, steps to each success threshold
(mean, std and a 95 % bootstrap CI over the seeds that reached it, and how many did),
area under the success curve, final success (mean and std across seeds), evaluation with
and without experience, steps/s and wall-clock; a learning-curve plot (mean and range over
seeds). Across tasks, each CRL arm against ``ppo``: IQM of final success and the
probability of improvement (rliable).
"""

from __future__ import annotations

import argparse
import math
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.harness.cli_checks import check_output_file
from benchmarks.suites.suites import SUITES

from .compare import COMPARE_TO, comparison_lines
from .results_reading import RESULTS, auc, curve_of, load_results
from .stats import bootstrap_ci
from .targets import METHOD_ARM, check_all, render_checks
from .trials_report import headline as trials_headline
from .trials_report import replace_block, trials_section

DOCS = Path(__file__).resolve().parents[2] / "docs"
ANALYSIS = Path(__file__).resolve().parent / "analysis.md"
README = Path(__file__).resolve().parents[2] / "README.md"
#: the latest side-by-side overhead runs, one per env (16k steps: MiniHack with the batched hand-over; CartPole);
#: overhead.json and overhead-process.json hold the earlier 8k- and 4k-step runs
OVERHEAD = (RESULTS / "overhead-16k-handover.json", RESULTS / "overhead-16k-cartpole.json")
HEADLINE_START, HEADLINE_END = "<!-- headline:start -->", "<!-- headline:end -->"
#: Suites in the README headline, each with the success threshold whose steps it shows.
HEADLINE_SUITES = {"keyroom-20-300k": "0.8", "keyroom-20": "0.8", "easy": "0.9", "easy-60k": "0.9", "medium": "0.8", "stretch": "0.5",
                   "mt10": "0.5", "ways": "0.9"}
#: The simple peers shown beside PPO and the method in the headline, per suite.
HEADLINE_PEERS = {"keyroom-20": ("ppo-bc", "ppo-kickstart", "ppo-sil", "crl-sil-plain"),
                  "keyroom-20-300k": ("ppo-bc", "ppo-kickstart", "ppo-sil")}


def fmt(x: float | None, digits: int = 2) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{x:.{digits}f}" if abs(x) < 1000 else f"{x / 1000:.1f}k"


def suite_thresholds(suite: str, arms: dict[str, list[dict]]) -> list[str]:
    """The success thresholds to tabulate: the suite's own (from ``benchmarks/suites/suites.py``) that
    the runs recorded, else every recorded threshold that some run reached."""
    recorded = {t for runs in arms.values() for r in runs for t in r["first_reached"]}
    if suite in SUITES:
        own = [f"{t:g}" for t in SUITES[suite].thresholds]
        if all(t in recorded for t in own):
            return own
    return sorted({t for t in recorded if any(r["first_reached"].get(t) for runs in arms.values() for r in runs)},
                  key=threshold_value)


def threshold_value(key: str) -> float:
    """The number in a threshold key: ``"0.9"`` (a success rate) or ``"return:475"`` (a return).

    >>> threshold_value("0.9"), threshold_value("return:237.5")
    (0.9, 237.5)
    """
    return float(key.split(":", 1)[1]) if key.startswith("return:") else float(key)


def threshold_label(key: str) -> str:
    """How a threshold key reads in a table.

    >>> threshold_label("0.9"), threshold_label("return:475")
    ('90%', 'return 475')
    """
    return f"return {threshold_value(key):g}" if key.startswith("return:") else f"{float(key):.0%}"


def gap_curve(run: dict) -> tuple[np.ndarray, np.ndarray]:
    """Steps and (rolling success of guided episodes - that of free ones) during training;
    empty for vanilla PPO and for all-guided arms (whose free window never refreshes)."""
    if run.get("arm_config", {}).get("callback", {}).get("guided_ratio") == 1.0:
        return np.zeros(0), np.zeros(0)
    return curve_of({"curve": [{"steps": c["steps"], "gap": c["guided"] - c["free"]} for c in run["curve"]
                               if c.get("guided") is not None and c.get("free") is not None]}, "gap")


def guided_gap(run: dict) -> float:
    """Mean of :func:`gap_curve` over the run (NaN where it is empty)."""
    _, gaps = gap_curve(run)
    return float(np.mean(gaps)) if len(gaps) else math.nan


def interval_eval_lines(arms: dict[str, list[dict]]) -> list[str]:
    """Table of the interval evaluations (mean over the seeds that have them), if any run has them."""
    rows = []
    for arm in sorted(arms, key=arm_order):
        by_step: dict[int, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        for r in arms[arm]:
            key = "success" if r["uses_success"] else "return"
            for h in r.get("eval_curve", []):
                for setting in ("with_experience", "without_experience"):
                    if setting in h:
                        by_step[h["steps"]][setting].append(h[setting][key])
        for steps in sorted(by_step):
            d = by_step[steps]
            n = max(len(v) for v in d.values())
            rows.append(f"| {arm} | {steps / 1000:.0f}k | {n} | {_mean_std(d.get('with_experience', []))} | "
                        f"{_mean_std(d.get('without_experience', []))} |")
    if not rows:
        return []
    return ["Evaluation at intervals (separate envs on the same bank, nothing learned):", "",
            "| arm | steps | seeds | with experience | without |", "| --- | --- | --- | --- | --- |", *rows, ""]


def arm_row(runs: list[dict], thresholds: list[str]) -> dict[str, Any]:
    row: dict[str, Any] = {"seeds": [r["seed"] for r in runs]}
    for t in thresholds:
        reached = [r["first_reached"].get(t) for r in runs if r["first_reached"].get(t) is not None]
        row[f"to_{t}"] = (reached, len(runs))
    finals = [r["final_outcome"] for r in runs if r["final_outcome"] is not None]
    row["final"] = finals
    row["auc"] = [auc(r) for r in runs]
    for name in ("with_experience", "without_experience"):
        vals = [r["evaluation"][name]["success" if r["uses_success"] else "return"]
                for r in runs if name in r.get("evaluation", {})]
        row[name] = vals
    row["gap"] = [guided_gap(r) for r in runs]
    row["sps"] = [r["steps_per_s"] for r in runs]
    row["wall"] = [r["wall_s"] for r in runs]
    row["steps"] = runs[0]["total_steps"]
    return row


def _mean_std(vals: list[float]) -> str:
    vals = [v for v in vals if v is not None and not math.isnan(v)]
    if not vals:
        return "n/a"
    return f"{np.mean(vals):.2f} ± {np.std(vals):.2f}"


def steps_cell(reached: list[int], n: int) -> str:
    if not reached:
        return f"never (0/{n})"
    lo, hi = bootstrap_ci(reached)
    ci = f" [{lo / 1000:.1f}k, {hi / 1000:.1f}k]" if not math.isnan(lo) else ""
    return f"{np.mean(reached) / 1000:.1f}k ± {np.std(reached) / 1000:.1f}k{ci} ({len(reached)}/{n})"


def _plot_band(ax: Any, label: str, curves: list[tuple[np.ndarray, np.ndarray]], color: Any = None) -> None:
    """Mean over seeds on the shortest seed's steps, and the range as a band."""
    curves = [(s, v) for s, v in curves if len(s) >= 2]
    if not curves:
        return
    grid = min((s for s, _ in curves), key=len)
    ys = np.array([np.interp(grid, s, v) for s, v in curves])
    ax.plot(grid, ys.mean(0), label=f"{label} ({len(curves)} seeds)", color=color)
    ax.fill_between(grid, ys.min(0), ys.max(0), alpha=0.15, color=color)


def plot_curves(env_id: str, arms: dict[str, list[dict]], path: Path) -> None:
    """Learning curves (mean and range over seeds); with CRL arms, a second panel shows the
    rolling success of guided minus free training episodes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    gaps = {arm: [gap_curve(r) for r in runs] for arm, runs in sorted(arms.items())}
    gaps = {arm: g for arm, g in gaps.items() if any(len(s) >= 2 for s, _ in g)}
    cycle = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    if len(arms) > len(cycle):  # more arms than the default cycle: a 20-colour palette, still one per arm
        cycle = [plt.get_cmap("tab20")(i) for i in range(20)]
    colors = {arm: cycle[i % len(cycle)] for i, arm in enumerate(sorted(arms))}  # one colour per arm, both panels
    fig, axes = plt.subplots(1, 2 if gaps else 1, figsize=(11 if gaps else 6, 3.6), squeeze=False)
    ax = axes[0, 0]
    for arm, runs in sorted(arms.items()):
        _plot_band(ax, arm, [curve_of(r) for r in runs], colors[arm])
    uses_success = next(iter(arms.values()))[0]["uses_success"]
    ax.set_xlabel("environment steps")
    ax.set_ylabel("success (last 100 episodes)" if uses_success else "return (last 100 episodes)")
    if uses_success:
        ax.set_ylim(0.0, 1.02)  # rates from zero: a narrow axis would make a tie look like a gap
    ax.set_title(env_id, fontsize=10)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    if gaps:
        gx = axes[0, 1]
        for arm, g in gaps.items():
            _plot_band(gx, arm, g, colors[arm])
        gx.axhline(0.0, color="black", linewidth=0.8)
        gx.set_xlabel("environment steps")
        gx.set_ylabel("guided − free (last 100 of each)")
        gx.set_title("does the shown experience change the outcome?", fontsize=10)
        gx.legend(fontsize=7)
        gx.grid(alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def aggregate(suite_envs: dict[str, dict[str, list[dict]]]) -> list[str]:
    """IQM of final success per arm and probability of improvement over ppo, across the suite's tasks."""
    try:
        from rliable import library as rly
        from rliable import metrics
    except Exception as exc:  # rliable is in the `bench` extra
        return [f"(aggregate skipped: rliable unavailable: {exc})"]
    arms = sorted({a for env in suite_envs.values() for a in env})
    envs = sorted(suite_envs)
    scores = {}
    for arm in arms:
        per_env = []
        for env in envs:
            runs = suite_envs[env].get(arm, [])
            per_env.append([r["final_outcome"] for r in runs if r["final_outcome"] is not None])
        n = min((len(v) for v in per_env), default=0)
        if n >= 2 and next(iter(suite_envs[envs[0]].values()))[0]["uses_success"]:
            scores[arm] = np.array([v[:n] for v in per_env]).T  # (seeds, tasks)
    if "ppo" not in scores or len(scores) < 2:
        return ["(aggregate needs >= 2 seeds per task for ppo and another arm, on success-based tasks)"]
    iqm = {a: metrics.aggregate_iqm(s) for a, s in scores.items()}
    lines = ["| arm | IQM of final success | P(arm > ppo) [95 % CI] |", "| --- | --- | --- |"]
    for arm in sorted(scores):
        if arm == "ppo":
            lines.append(f"| ppo | {iqm[arm]:.3f} | |")
            continue
        n = min(len(scores[arm]), len(scores["ppo"]))
        pair = {f"{arm},ppo": (scores[arm][:n], scores["ppo"][:n])}
        np.random.seed(0)  # noqa: NPY002 -- rliable's bootstrap (arch) draws from numpy's global generator
        est, ci = rly.get_interval_estimates(pair, metrics.probability_of_improvement, reps=1000)
        key = f"{arm},ppo"
        lines.append(f"| {arm} | {iqm[arm]:.3f} | {float(np.squeeze(est[key])):.2f} "
                     f"[{float(ci[key][0].squeeze()):.2f}, {float(ci[key][1].squeeze()):.2f}] |")
    return lines


def arm_order(arm: str) -> tuple[bool, bool, str]:
    """Sort key of arms in tables: ``ppo`` first, then ``crl`` (reference copies beside them), then by name."""
    base = arm.split(" (")[0]
    return base != "ppo", base != "crl", arm


def with_reference(results: dict, suite: str, env_id: str) -> dict[str, list[dict]]:
    """The suite's arms on ``env_id``, after the ``ppo`` and ``crl`` runs of its reference suite
    (``Suite.reference``), named ``"ppo (medium)"`` and so on.

    >>> res = {"medium": {"E": {"ppo": [1], "crl": [2]}}, "medium-ablations": {"E": {"crl-static": [3]}}}
    >>> list(with_reference(res, "medium-ablations", "E"))
    ['ppo (medium)', 'crl (medium)', 'crl-static']
    """
    own = results[suite][env_id]
    ref = SUITES[suite].reference if suite in SUITES else None
    ref_arms = results.get(ref, {}).get(env_id, {}) if ref else {}
    return {**{f"{a} ({ref})": ref_arms[a] for a in ("ppo", "crl") if a in ref_arms}, **own}


def render(results: dict, out_md: Path, fig_dir: Path, overhead: Sequence[Path] = (), targets: bool = True,
           results_dir: str = "benchmarks/results/", trials_root: Path | None = None) -> str:
    """The report page (tables and figures); ``targets``: add the project's targets section."""
    lines = ["# Benchmarks", "",
             f"Generated by `python -m benchmarks.reporting.report` from the result files in `{results_dir}`;",
             "each suite's runs come from `python -m benchmarks.harness.runner --suite NAME` (the exact command is",
             "in every result file). Success is the rolling success rate over the last 100 episodes.",
             "Steps-to-threshold: mean ± std over the seeds that reached it, a 95 % bootstrap CI, and how",
             "many seeds reached it. Evaluation: 50 sampled-action episodes (fewer for small suites), with",
             "every episode guided, then every episode free. \"guided − free (training)\": the mean over",
             "the run of the rolling success of guided training episodes minus that of free ones (does",
             "what the agent is shown change its outcome while it learns?).", ""]
    if targets:
        lines += ["## Targets of the benchmarks issue", "",
                  "Each target checked against the result files by `benchmarks/reporting/targets.py` (\"undecided\":",
                  "the results cannot settle it; a target with fewer seeds than the issue asks counts as not met).", "",
                  *render_checks(check_all(results, overhead)), ""]
    trials = trials_section(trials_root) if trials_root is not None else []
    if trials:
        lines += ["## Trials of one instance: held-out instances, frozen weights", "",
                  "Written by `python -m benchmarks.suites.trials`; what the columns mean is in `benchmarks/reporting/trials_report.py`.", "",
                  *trials]
    for suite in sorted(results):
        lines += [f"## Suite `{suite}`", ""]
        for env_id in sorted(results[suite]):
            arms = with_reference(results, suite, env_id)
            thresholds = suite_thresholds(suite, arms)
            rows = {arm: arm_row(runs, thresholds) for arm, runs in arms.items()}
            uses_success = next(iter(arms.values()))[0]["uses_success"]
            what = "success" if uses_success else "return"
            lines += [f"### {env_id}", "", tuned_line(arms), ""]
            head = ["arm", "seeds", "steps", *[f"steps to {threshold_label(t)}" for t in thresholds],
                    f"final {what}", "AUC", f"eval {what} with exp.", f"eval {what} without", "guided − free (training)", "steps/s",
                    "wall s"]
            lines += ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
            order = sorted(rows, key=arm_order)
            for arm in order:
                r = rows[arm]
                cells = [arm, ",".join(map(str, r["seeds"])), f"{r['steps'] / 1000:.0f}k",
                         *[steps_cell(*r[f"to_{t}"]) for t in thresholds],
                         _mean_std(r["final"]), _mean_std(r["auc"]), _mean_std(r["with_experience"]),
                         _mean_std(r["without_experience"]), _mean_std(r["gap"]), f"{np.mean(r['sps']):.0f}", f"{np.mean(r['wall']):.0f}"]
                lines.append("| " + " | ".join(cells) + " |")
            if suite in COMPARE_TO:
                lines += ["", *comparison_lines(arms, COMPARE_TO[suite])]
            lines += ["", *interval_eval_lines(arms)]
            png = fig_dir / f"{suite}_{env_id.replace('/', '_')}.png"
            plot_curves(env_id, arms, png)
            lines += ["", f"![{env_id} learning curves]({png.relative_to(out_md.parent).as_posix()})", ""]
        agg = aggregate(results[suite])
        lines += ["**Aggregate over the suite's tasks** (final success):", "", *agg, ""]
    text = "\n".join(lines) + "\n"
    return text


def tuned_line(arms: dict[str, list[dict]]) -> str:
    """Whether the runs' PPO hyperparameters are a tuned block (``tuned_from`` in the YAML) or untuned.

    >>> tuned_line({"ppo": [{"hyperparameters": {"tuned_from": "rl-baselines3-zoo"}}]})
    'PPO hyperparameters: tuned (rl-baselines3-zoo).'
    >>> tuned_line({"ppo": [{"hyperparameters": {"n_steps": 128}}]})
    "PPO hyperparameters: untuned (the library's choice; no tuned block for this env)."
    """
    sources = {r.get("hyperparameters", {}).get("tuned_from") for runs in arms.values() for r in runs}
    tuned = sorted(s for s in sources if s)
    if tuned and None not in sources:
        return f"PPO hyperparameters: tuned ({', '.join(tuned)})."
    if tuned:
        return f"PPO hyperparameters: some runs tuned ({', '.join(tuned)}), some not."
    return "PPO hyperparameters: untuned (the library's choice; no tuned block for this env)."


def headline(results: dict) -> list[str]:
    """The README's table: ppo vs the suite's method arm (``crl``, or :data:`METHOD_ARM`'s) per task
    of the headline suites that have results, with steps to the suite's main threshold (90 % on
    the easy rooms, 80 % on the medium tasks, 50 % on KeyRoom and MT10)."""
    lines = ["| suite | task | arm | seeds | final success | steps to threshold | eval with / without exp. |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for suite, threshold in HEADLINE_SUITES.items():
        for env_id, arms in sorted(results.get(suite, {}).items()):
            for arm in ("ppo", *HEADLINE_PEERS.get(suite, ()), METHOD_ARM.get(suite, "crl")):
                runs = arms.get(arm)
                if not runs:
                    continue
                r = arm_row(runs, [threshold])
                lines.append(f"| {suite} | {env_id} | {arm} | {len(runs)} | {_mean_std(r['final'])} | "
                             f"{float(threshold):.0%}: {steps_cell(*r[f'to_{threshold}'])} | "
                             f"{_mean_std(r['with_experience'])} / {_mean_std(r['without_experience'])} |")
    return lines if len(lines) > 2 else ["(no headline results yet)"]


#: the suites that check the public object's defaults on tasks no other suite contains
DEFAULTS_SUITES = ("defaults-cartpole", "defaults-room15")  # room15: not yet run
#: the page whose ``defaults`` block :func:`defaults_table` fills
WHAT_TO_USE = DOCS / "what_to_use.md"
DEFAULTS_START, DEFAULTS_END = "<!-- defaults:start -->", "<!-- defaults:end -->"
#: what each arm of the defaults suites is, for the table
DEFAULTS_ARMS = {"ppo": "PPO", "crl": "the observation channel, no self-imitation",
                 "crl-sil-own": "the channel + self-imitation of own successes (the defaults on a task that reports success)",
                 "ppo-sil": "self-imitation from a plain buffer, no bank"}


def defaults_table(results: dict) -> list[str]:
    """The defaults suites' table: final success (or return) and evaluation, mean ± std over seeds."""
    lines = ["| suite | task | arm | what | seeds | steps | final | eval with / without exp. |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for suite in DEFAULTS_SUITES:
        for env_id, arms in sorted(results.get(suite, {}).items()):
            for arm in sorted(arms, key=arm_order):
                r = arm_row(arms[arm], [])
                unit = "" if arms[arm][0]["uses_success"] else " (return)"
                lines.append(f"| {suite} | {env_id} | `{arm}` | {DEFAULTS_ARMS.get(arm, '')} | "
                             f"{', '.join(map(str, r['seeds']))} | {r['steps'] // 1000}k | {_mean_std(r['final'])}{unit} | "
                             f"{_mean_std(r['with_experience'])} / {_mean_std(r['without_experience'])} |")
    return lines if len(lines) > 2 else ["(no defaults results yet)"]


def targets_line(checks: list) -> str:
    """One sentence: how many of the issue's targets the results meet, and which are missed."""
    if not checks:
        return "No target of the benchmarks issue can be checked yet."
    met = [c for c in checks if c.met is True]
    line = f"Targets of the benchmarks issue met: **{len(met)} of {len(checks)}** checks"
    for word, verdict in (("not met", False), ("undecided", None)):
        names = sorted({f"{c.suite}: {c.target}" for c in checks if c.met is verdict})
        if names:
            line += f"; {word}: {'; '.join(names)}"
    return line + "."


TRIALS_START, TRIALS_END = "<!-- trials:start -->", "<!-- trials:end -->"
TRIALS_PAGE = DOCS / "trials.md"


def update_readme(readme: Path, results: dict, overhead: Sequence[Path] = (), trials_root: Path = RESULTS) -> None:
    """Replace the block between the headline markers of the README (if both are there)."""
    text = readme.read_text()
    if HEADLINE_START not in text or HEADLINE_END not in text:
        return
    before, rest = text.split(HEADLINE_START, 1)
    _, after = rest.split(HEADLINE_END, 1)
    block = "\n".join(["", *headline(results), "", targets_line(check_all(results, overhead)), ""])
    text = before + HEADLINE_START + block + "\n" + HEADLINE_END + after
    readme.write_text(replace_block(text, TRIALS_START, TRIALS_END, ["", *trials_headline(trials_root), ""]))


def main(argv: list[str] | None = None, *, into_repository: bool = True) -> str:
    """Write the report. ``python -m benchmarks.reporting.report`` (``into_repository``) writes the project's
    docs/benchmarks.md by default; the ``crl-report`` console script writes beside the results it
    reads (``<results>/report.md``) unless ``--out`` says otherwise."""
    default_out = DOCS / "benchmarks.md"
    p = argparse.ArgumentParser(description="Write a benchmark report (markdown + PNG figures) from result files.")
    p.add_argument("--results", type=Path, default=None,
                   help="result folder (default: benchmarks/results; crl-report: where crl-bench writes by default)")
    p.add_argument("--suites", nargs="*")
    p.add_argument("--out", type=Path, default=None,
                   help="the page to write; figures go to figures/ beside it (default: docs/benchmarks.md with "
                        "python -m benchmarks.reporting.report on benchmarks/results, else <results>/report.md)")
    p.add_argument("--analysis", type=Path, default=None,
                   help="hand-written analysis placed before the tables (default: benchmarks/reporting/analysis.md "
                        "when writing docs/benchmarks.md, else none)")
    p.add_argument("--targets", action="store_true",
                   help="add the benchmarks issue's targets (always on for docs/benchmarks.md)")
    p.add_argument("--overhead", type=Path, nargs="*", default=None,
                   help="overhead benchmark result files (default: the latest 16k-step runs)")
    p.add_argument("--readme", type=Path, nargs="?", const=README, default=None,
                   help="also refresh the headline block of this README (default path: the repository's)")
    args = p.parse_args(argv)
    if args.results is None:
        from benchmarks.harness.runner import default_results

        args.results = RESULTS if into_repository else default_results()
    if not args.results.is_dir():
        p.error(f"no result folder {args.results} (write one with python -m benchmarks.harness.runner)")
    own = into_repository and args.results.resolve() == RESULTS.resolve()
    if args.out is None:  # (the project's pages are written from the project's results only)
        args.out = default_out if own else args.results / "report.md"
    if args.readme is not None and not own and args.readme.resolve() == README.resolve():
        p.error(f"--readme refreshes the project's README from the project's results (benchmarks/results), not "
                f"from {args.results}: give --readme PATH of a README of your own")
    project = args.out.resolve() == default_out.resolve()
    analysis = args.analysis or (ANALYSIS if project else None)
    missing = [f"{flag} {path}" for flag, paths in (("--analysis", [args.analysis] if args.analysis else []),
                                                     ("--overhead", args.overhead or [])) for path in paths
               if not Path(path).is_file()]
    if missing:  # (given by name: refused; the defaults are read where they exist)
        p.error(f"no such file: {', '.join(missing)}")
    if args.overhead is None:
        args.overhead = [path for path in OVERHEAD if path.is_file()]
    try:
        check_output_file(args.out, "--out")
    except ValueError as exc:
        p.error(str(exc))
    results = load_results(args.results, args.suites)
    have = sorted(d.name for d in args.results.iterdir() if d.is_dir())
    unknown = sorted(set(args.suites or ()) - set(results) - set(have))
    if unknown:
        p.error(f"--suites: no results of {unknown} in {args.results} (its suites: {have})")
    text = render(results, args.out, args.out.parent / "figures", args.overhead, targets=project or args.targets,
                  results_dir=f"{args.results.as_posix()}/" if not project else "benchmarks/results/",
                  trials_root=args.results)
    if analysis is not None and analysis.exists():
        head, _, tables = text.partition("\n## ")
        text = head + "\n" + analysis.read_text().strip() + "\n\n## " + tables
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    if project and WHAT_TO_USE.exists():  # the defaults block of the what-to-use page
        WHAT_TO_USE.write_text(replace_block(WHAT_TO_USE.read_text(), DEFAULTS_START, DEFAULTS_END,
                                             ["", *defaults_table(results), ""]))
    if project and TRIALS_PAGE.exists():  # the trials page's results block, from the same files
        TRIALS_PAGE.write_text(replace_block(TRIALS_PAGE.read_text(), "<!-- trials-results:start -->",
                                             "<!-- trials-results:end -->", ["", *trials_section(args.results), ""]))
    print(f"wrote {args.out} and its figures in {args.out.parent / 'figures'} "
          f"({sum(len(a) for s in results.values() for a in s.values())} env x arm groups)")
    if args.readme is not None:
        if not args.readme.exists():
            p.error(f"no README at {args.readme}")
        update_readme(args.readme, results, args.overhead, args.results)
        print(f"refreshed the headline of {args.readme}")
    return text


def cli() -> int:
    """The ``crl-report`` console script: by default the report goes beside the results it reads."""
    main(into_repository=False)
    return 0


if __name__ == "__main__":
    main()
