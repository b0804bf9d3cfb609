"""The scale-out benchmark's table and the docs page it rewrites (no Ray needed)."""

from __future__ import annotations

from benchmarks.perf.scaleout import END, START, fmt_table, pct, write_doc


def _report() -> dict:
    def run(w: int, arm: str, rate: float) -> dict:
        r = {"env": "CartPole-v1", "workers": w, "arm": arm, "service": arm in ("remote", "local"),
             "steps_per_s": rate * w, "per_worker_steps_per_s": [rate] * w, "mean_per_worker_steps_per_s": rate}
        if arm != "none":
            r.update(query_p50_ms_per_worker=[1.5 if arm == "remote" else 0.05] * w,
                     poll_p50_ms_per_worker=[3.0] * w)
        if arm == "local":
            r.update(replica_lag_per_worker=[2.0] * w,
                     learner={"episodes_processed": 90.0, "episodes_submitted": 100.0, "learner_backlog": 10.0})
        return r

    lat = {"p50_ms": 1.0, "p95_ms": 2.0}
    rollout = [run(1, "none", 1000.0), run(1, "in_process", 700.0), run(1, "remote", 500.0),
               run(1, "local", 900.0), run(2, "none", 900.0), run(2, "local", 450.0)]
    return {
        "date": "2026-01-01 00:00 UTC", "machine": {"cpus": 2}, "load": "0.50, 0.40, 0.30",
        "command": "python -m benchmarks.perf.scaleout --workers 1 2",
        "args": {"workers": [1, 2], "envs": ["CartPole-v1"], "n_envs": 4, "seconds": 8.0, "bank_size": 10_000,
                 "rollout_steps": 128},
        "rollout": rollout,
        "latency": {"len": lat, "query_1": lat},
        "capacity": {"clients": 4, **{f"batch_{b}": {"calls_per_s": 800.0, "keys_per_s": 800.0 * b,
                                                     "in_process_calls_per_s": 8000.0} for b in (1, 16)}},
    }


def test_table_has_one_row_per_worker_count_and_the_ratios():
    table = fmt_table(_report())
    assert "load average before the run: 0.50, 0.40, 0.30" in table and "--workers 1 2" in table
    assert "| 1 | 1000 | 700 | 500 | 900 | 0.90x | 1.29x | 1.00x | 1.500 / 0.050 | 3.0 | 90 / 100 (10) | 2 |" in table
    assert "| 2 | 900 | - | - | 450 | 0.50x | - | 0.50x | - / 0.050 | 3.0 | 90 / 100 (10) | 2, 2 |" in table
    assert "| `query_1` | 1.00 | 2.00 |" in table and "| 16 | 800 | 12800 | 8000 |" in table


def test_write_doc_replaces_only_its_section(tmp_path):
    page = tmp_path / "scaling.md"
    page.write_text(f"# Scaling\n\nprose\n\n{START}\nold\n{END}\n\nmore prose\n")
    write_doc("new table", page)
    write_doc("newer table", page)
    text = page.read_text()
    assert text == f"# Scaling\n\nprose\n\n{START}\nnewer table\n{END}\n\nmore prose\n"
    fresh = tmp_path / "fresh.md"
    write_doc("t", fresh)
    assert f"{START}\nt\n{END}" in fresh.read_text()


def test_pct_in_milliseconds():
    out = pct([0.001, 0.002, 0.003])
    assert out["p50_ms"] == 2.0 and out["n"] == 3
    assert pct([])["n"] == 0
