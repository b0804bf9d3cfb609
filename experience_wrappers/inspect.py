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
from .errors import ExperienceFileError

__all__ = ["find_bank_folder", "summarise", "format_summary", "plot", "main"]


def find_bank_folder(path: str | Path) -> Path:
    """The bank folder in ``path``: the folder itself, its ``bank/``, or its ``experience/bank/``.

    A candidate counts when its ``meta.json`` says it is a bank: a run folder (``save_crl``'s)
    and a manager's folder have a ``meta.json`` of their own, and their bank is inside.

    Raises:
        FileNotFoundError: none of them holds a saved bank.
    """
    path = Path(path)
    for cand in (path, path / "bank", path / "experience" / "bank"):
        if _bank_format(cand / "meta.json"):
            return cand
    raise FileNotFoundError(f"no saved bank in {path} (looked for a bank's meta.json in it, in bank/ and in "
                            "experience/bank/); write one with bank.save(path) or save_crl(path, model)")


def _bank_format(meta: Path) -> bool:
    """Whether ``meta`` is a file that names the bank's format (a damaged one counts: the load says why)."""
    if not meta.is_file():
        return False
    try:
        found = json.loads(meta.read_bytes())
    except (OSError, ValueError, RecursionError):
        return True
    return not isinstance(found, dict) or found.get("format") in (None, ExperienceBank.FORMAT)


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


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def load_run(path: Path) -> dict[str, Any]:
    """A benchmark result file for ``--run``, checked for what :func:`plot` reads from it.

    Raises:
        ValueError: (one line, naming ``--run`` and the file) it is missing, a folder,
            unreadable, not JSON, not a JSON object, or its ``bank_curve`` is not a list of
            snapshots (objects with numeric ``steps`` and ``size``).
    """
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ValueError(f"--run {path}: no such file") from None
    except IsADirectoryError:
        raise ValueError(f"--run {path}: is a folder, not a benchmark result file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"--run {path}: cannot be read ({exc})") from None
    try:
        run = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"--run {path} is not JSON ({str(exc) or type(exc).__name__})") from None
    if not isinstance(run, dict):
        raise ValueError(f"--run {path} is not a benchmark result (a JSON object): it holds a {type(run).__name__}")
    curve = run.get("bank_curve")
    if curve is None:
        return run
    if not isinstance(curve, list):
        raise ValueError(f"--run {path}: bank_curve is a {type(curve).__name__}, not a list of bank snapshots")
    names = [p.name.lower() for p in Provenance]
    for i, c in enumerate(curve):
        ok = (isinstance(c, dict) and _number(c.get("steps")) and _number(c.get("size"))
              and all(c.get(n) is None or (isinstance(c[n], dict) and _number(c[n].get("n", 0))) for n in names))
        if not ok:
            raise ValueError(f"--run {path}: bank_curve[{i}] is not a bank snapshot (an object with numeric steps "
                             f"and size, and per provenance {{\"n\": number}}): {json.dumps(c)[:80]}")
    return run


def _check_plot_folder(path: Path) -> None:
    """Raise ValueError (one line) if ``--plot`` could not make ``path`` a folder and write in it."""
    for part in (path, *path.parents):
        if not part.exists():
            continue
        if not part.is_dir():
            raise ValueError(f"--plot {path}: {part} is a file, "
                             + ("not a folder" if part == path else "so no folder can be made under it"))
        return


def main(argv: list[str] | None = None) -> int:
    """``crl-inspect``: print a saved bank's summary (and write its figures).

    Every problem with the arguments or the files (a missing, damaged or newer bank, a bad
    ``--run`` file, a ``--plot`` folder that is a file, no matplotlib) is one error line and
    exit code 2, before anything is printed or written where it can be checked first.
    """
    p = argparse.ArgumentParser(prog="crl-inspect", description="Summarise a saved experience bank.")
    p.add_argument("path", type=Path, help="a bank folder, or a folder holding bank/ or experience/bank/")
    p.add_argument("--plot", type=Path, metavar="DIR", help="also write PNG figures to DIR")
    p.add_argument("--run", type=Path, metavar="RESULT_JSON",
                   help="a benchmark result file whose bank_curve gives entries over training (with --plot)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = p.parse_args(argv)
    if args.run is not None and args.plot is None:
        p.error("--run needs --plot DIR (it adds the entries-over-training figure there)")
    try:
        run = load_run(args.run) if args.run is not None else None
        if args.plot is not None:
            _check_plot_folder(args.plot)
    except ValueError as exc:
        p.error(str(exc))
    try:
        folder = find_bank_folder(args.path)
    except OSError as exc:
        p.error(str(exc))
    try:
        bank = ExperienceBank.load(folder)
    except ExperienceFileError as exc:
        p.error(str(exc))
    except (OSError, ValueError, RecursionError) as exc:  # what the bank's own checks did not name
        p.error(f"cannot load experience bank from '{folder}': {str(exc) or type(exc).__name__}")
    s = summarise(bank)
    print(json.dumps(s, indent=1) if args.json else format_summary(s, str(folder)))
    if args.plot is not None:
        try:
            written = plot(bank, args.plot, run)
        except ImportError as exc:
            p.error(str(exc))
        except OSError as exc:
            p.error(f"--plot {args.plot}: cannot write the figures ({exc})")
        for path in written:
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
