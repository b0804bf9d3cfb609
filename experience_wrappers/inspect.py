"""Look inside a saved experience bank: a text summary and, optionally, PNG figures.

Run (``crl-inspect`` is the same command, installed by ``pip install``)::

    python -m experience_wrappers.inspect runs/bank                # a folder written by bank.save
    python -m experience_wrappers.inspect runs/crl                 # save_crl's folder (experience/bank inside)
    python -m experience_wrappers.inspect runs/ckpt/rl_model_1000_steps_experience --plot figures
    python -m experience_wrappers.inspect runs/bank --plot figures --run result.json   # + entries over training

The summary: size and capacity, entries per provenance, the utility distribution (overall
and per provenance), retrieval and credit counts, age (the env step an entry was created
at) and entries per task. ``--plot DIR`` writes ``utility_by_provenance.png``,
``retrievals_vs_utility.png`` and, with ``--run`` (a benchmark result file with a
``bank_curve``), ``entries_over_training.png``; it needs matplotlib (the ``bench`` extra).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from .bank import ExperienceBank, Provenance

__all__ = ["find_bank_folder", "summarise", "format_summary", "plot", "main"]


def find_bank_folder(path: str | Path) -> Path:
    """The bank folder in ``path``: the folder itself, its ``bank/``, or its ``experience/bank/``.

    Raises:
        FileNotFoundError: none of them holds a saved bank.
    """
    path = Path(path)
    for cand in (path, path / "bank", path / "experience" / "bank"):
        if (cand / "meta.json").is_file():
            return cand
    raise FileNotFoundError(f"no saved bank in {path} (looked for meta.json in it, in bank/ and in "
                            "experience/bank/); write one with bank.save(path) or save_crl(path, model)")


def _quantiles(x: np.ndarray) -> dict[str, float]:
    if x.size == 0:
        return {}
    q = np.quantile(x, [0.0, 0.25, 0.5, 0.75, 1.0])
    return {"mean": float(x.mean()), "min": float(q[0]), "p25": float(q[1]), "median": float(q[2]),
            "p75": float(q[3]), "max": float(q[4])}


def summarise(bank: ExperienceBank) -> dict[str, Any]:
    """What ``bank`` holds, as plain numbers (JSON-ready).

    >>> summarise(ExperienceBank())["size"]
    0
    """
    cols = bank.entries()
    stats = bank.stats()
    out: dict[str, Any] = {"size": len(bank), "capacity": int(stats["capacity"]), "queries": int(stats["queries"]),
                           "dims": bank.dims}
    if not cols or len(bank) == 0:
        return out
    prov, util = cols["provenance"], cols["utility"]
    retrieved, credited = cols["n_retrieved"], cols["n_credited"]
    out["provenance"] = {p.name.lower(): int((prov == int(p)).sum()) for p in Provenance}
    out["utility"] = _quantiles(util)
    out["utility_by_provenance"] = {p.name.lower(): _quantiles(util[prov == int(p)])
                                    for p in Provenance if (prov == int(p)).any()}
    out["retrievals"] = {"total": int(retrieved.sum()), "never_retrieved": int((retrieved == 0).sum()),
                         "mean": float(retrieved.mean()), "max": int(retrieved.max())}
    out["credited"] = {"entries": int((credited > 0).sum()), "credits": int(credited.sum())}
    out["created_step"] = _quantiles(cols["created_step"].astype(float))
    tasks, counts = np.unique(cols["task_id"], return_counts=True)
    out["tasks"] = {int(t): int(c) for t, c in zip(tasks, counts, strict=True)}
    return out


def format_summary(s: dict[str, Any], where: str = "") -> str:
    """The summary as text lines."""
    def q(d: dict[str, float], f: str = ".3g") -> str:
        return ", ".join(f"{k} {v:{f}}" for k, v in d.items()) if d else "n/a"

    lines = [f"bank{' ' + where if where else ''}: {s['size']} entries (capacity {s['capacity']}), "
             f"{s['queries']} queries so far; dims {s['dims']}"]
    if s["size"] == 0:
        return "\n".join([*lines, "(empty)"])
    lines.append("provenance: " + ", ".join(f"{k} {v}" for k, v in s["provenance"].items()))
    lines.append(f"utility: {q(s['utility'])}")
    for name, d in s["utility_by_provenance"].items():
        lines.append(f"  {name}: {q(d)}")
    r = s["retrievals"]
    lines.append(f"retrievals: {r['total']} in all, mean {r['mean']:.3g} per entry, max {r['max']}, "
                 f"{r['never_retrieved']} entries never retrieved")
    lines.append(f"credited: {s['credited']['entries']} entries ({s['credited']['credits']} credits)")
    lines.append(f"created at the writing env's own step (each env counts its own steps; with n envs the "
                 f"run's total is about n times it): {q(s['created_step'], '.0f')}")
    lines.append("entries per task: " + ", ".join(f"{t}: {n}" for t, n in s["tasks"].items()))
    return "\n".join(lines)


def plot(bank: ExperienceBank, out_dir: str | Path, run: dict[str, Any] | None = None) -> list[Path]:
    """Write the PNG figures to ``out_dir`` and return their paths."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError("--plot needs matplotlib: pip install 'complementary-rl[bench]'") from exc
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    cols = bank.entries()
    written = []
    if cols and len(bank):
        prov, util = cols["provenance"], cols["utility"]
        fig, ax = plt.subplots(figsize=(6, 3.6))
        for p in Provenance:
            sel = util[prov == int(p)]
            if sel.size:
                ax.hist(sel, bins=30, alpha=0.6, label=f"{p.name.lower()} ({sel.size})")
        ax.set_xlabel("utility")
        ax.set_ylabel("entries")
        ax.set_title("utility by provenance", fontsize=10)
        ax.legend(fontsize=7)
        written.append(_save(fig, out_dir / "utility_by_provenance.png", plt))
        fig, ax = plt.subplots(figsize=(6, 3.6))
        for p in Provenance:
            sel = prov == int(p)
            if sel.any():
                ax.scatter(util[sel], cols["n_retrieved"][sel], s=8, alpha=0.6, label=p.name.lower())
        ax.set_xlabel("utility")
        ax.set_ylabel("times retrieved")
        ax.set_title("retrievals vs utility", fontsize=10)
        ax.legend(fontsize=7)
        written.append(_save(fig, out_dir / "retrievals_vs_utility.png", plt))
    curve = (run or {}).get("bank_curve") or []
    if curve:
        fig, ax = plt.subplots(figsize=(6, 3.6))
        steps = [c["steps"] for c in curve]
        ax.plot(steps, [c["size"] for c in curve], "o-", label="all", color="black", markersize=3)
        for p in Provenance:
            name = p.name.lower()
            ax.plot(steps, [c.get(name, {}).get("n", 0) for c in curve], "o-", label=name, markersize=3)
        ax.set_xlabel("environment steps (all envs, as the runner counts them)")
        ax.set_ylabel("entries")
        ax.set_title("entries over training" + ("" if len(curve) > 1 else
                                                 " (one snapshot: too short a run for a curve)"), fontsize=10)
        ax.legend(fontsize=7)
        written.append(_save(fig, out_dir / "entries_over_training.png", plt))
    return written


def _save(fig: Any, path: Path, plt: Any) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="crl-inspect", description="Summarise a saved experience bank.")
    p.add_argument("path", type=Path, help="a bank folder, or a folder holding bank/ or experience/bank/")
    p.add_argument("--plot", type=Path, metavar="DIR", help="also write PNG figures to DIR")
    p.add_argument("--run", type=Path, metavar="RESULT_JSON",
                   help="a benchmark result file whose bank_curve gives entries over training (with --plot)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = p.parse_args(argv)
    try:
        folder = find_bank_folder(args.path)
        bank = ExperienceBank.load(folder)
    except (FileNotFoundError, ValueError) as exc:
        p.error(str(exc))
    s = summarise(bank)
    print(json.dumps(s, indent=1) if args.json else format_summary(s, str(folder)))
    if args.plot is not None:
        run = json.loads(args.run.read_text()) if args.run else None
        for path in plot(bank, args.plot, run):
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
