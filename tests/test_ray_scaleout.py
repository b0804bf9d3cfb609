"""The scale-out benchmark's table and the docs page it rewrites (no Ray needed)."""

from __future__ import annotations

from benchmarks.scaleout import END, START, fmt_table, pct, write_doc


def _report() -> dict:
    def run(w: int, service: bool, rate: float) -> dict:
        r = {"workers": w, "service": service, "steps_per_s": rate * w, "per_worker_steps_per_s": [rate] * w}
        if service:
            r.update(query_p50_ms_per_worker=[1.5] * w,
                     learner={"episodes_processed": 90.0, "episodes_submitted": 100.0})
        return r

    lat = {"p50_ms": 1.0, "p95_ms": 2.0}
    return {
        "date": "2026-01-01 00:00 UTC", "machine": {"cpus": 2},
        "args": {"workers": [1, 2], "env": "CartPole-v1", "n_envs": 4, "seconds": 8.0, "bank_size": 10_000},
        "rollout": [run(1, False, 1000.0), run(1, True, 500.0), run(2, False, 900.0), run(2, True, 400.0)],
        "latency": {"len": lat, "query_1": lat},
        "capacity": {"clients": 4, **{f"batch_{b}": {"calls_per_s": 800.0, "keys_per_s": 800.0 * b,
                                                     "in_process_calls_per_s": 8000.0} for b in (1, 16)}},
    }


def test_table_has_one_row_per_worker_count_and_the_ratio_to_one_worker():
    table = fmt_table(_report())
    assert "| 1 | 1000 | 500 | 1.00x | 500 | 1.50 | 90 / 100 |" in table
    assert "| 2 | 1800 | 800 | 1.60x | 400, 400 | 1.50, 1.50 | 90 / 100 |" in table
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
