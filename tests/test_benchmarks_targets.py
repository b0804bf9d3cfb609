"""The benchmark issue's targets, checked on synthetic result records."""

from __future__ import annotations

import json
import math

import pytest

from benchmarks.reporting.stats import bootstrap_ci
from benchmarks.reporting.targets import (
    Check,
    check_all,
    check_overhead,
    render_checks,
    steps_to_level,
)


def run(seed: int, final: float, to90: int | None = None, curve: list[tuple[int, float]] | None = None,
        steps: int = 300_000) -> dict:
    pts = curve or [(steps, final)]
    return {"seed": seed, "final_outcome": final, "total_steps": steps,
            "first_reached": {"0.9": to90},
            "curve": [{"steps": s, "episodes": 100 + i, "outcome": v} for i, (s, v) in enumerate(pts)]}


def by_target(checks: list[Check]) -> dict[str, Check]:
    return {c.target: c for c in checks}


def test_easy_targets_met_when_crl_is_twice_as_fast_and_steadier():
    ppo = [run(s, 0.95 + 0.01 * s, to90=30_000) for s in range(5)]
    crl = [run(s, 0.99, to90=15_000) for s in range(5)]
    checks = by_target(check_all({"easy": {"T": {"ppo": ppo, "crl": crl}}}))
    assert checks["steps to 90 % <= 0.6x PPO's"].met is True
    assert "0.50x" in checks["steps to 90 % <= 0.6x PPO's"].measured
    assert checks["std of final success across seeds <= 0.6x PPO's"].met is True
    assert checks["never ends below PPO (mean, and worst seed)"].met is True


def test_easy_targets_missed_on_a_tie_and_with_too_few_seeds():
    ppo = [run(s, 0.97, to90=30_000) for s in range(5)]
    tie = by_target(check_all({"easy": {"T": {"ppo": ppo, "crl": [run(s, 0.96, to90=29_000) for s in range(5)]}}}))
    assert tie["steps to 90 % <= 0.6x PPO's"].met is False
    assert tie["never ends below PPO (mean, and worst seed)"].met is False
    few = by_target(check_all({"easy": {"T": {"ppo": ppo[:2], "crl": [run(s, 1.0, to90=1_000) for s in range(2)]}}}))
    assert few["steps to 90 % <= 0.6x PPO's"].met is False  # the issue asks for >= 5 seeds
    assert few["steps to 90 % <= 0.6x PPO's"].seeds == "2 / 2"


def test_easy_steps_target_undecided_when_a_seed_never_reached():
    ppo = [run(s, 0.97, to90=30_000) for s in range(5)]
    crl = [run(s, 0.97, to90=None if s == 0 else 10_000) for s in range(5)]
    check = by_target(check_all({"easy": {"T": {"ppo": ppo, "crl": crl}}}))["steps to 90 % <= 0.6x PPO's"]
    assert check.met is None and "crl 1" in check.measured


def test_medium_targets_met_when_crl_gets_there_early_and_ends_higher():
    ppo = [run(s, 0.60 + 0.02 * s) for s in range(5)]  # mean final 0.64
    crl = [run(s, 0.85 + 0.01 * s, curve=[(50_000, 0.5), (100_000, 0.7), (300_000, 0.85 + 0.01 * s)])
           for s in range(5)]
    checks = by_target(check_all({"medium": {"T": {"ppo": ppo, "crl": crl}}}))
    reach = checks["reaches PPO's mean final success in <= 0.6x the steps"]
    assert reach.met is True and "0.33x" in reach.measured
    assert checks["ends >= 10 points above PPO, 95 % CIs apart"].met is True
    assert checks["smaller spread of final success across seeds"].met is True


def test_medium_targets_missed_when_crl_never_gets_there():
    ppo = [run(s, 0.7) for s in range(5)]
    crl = [run(s, 0.5, curve=[(100_000, 0.3), (300_000, 0.5)]) for s in range(5)]
    checks = by_target(check_all({"medium": {"T": {"ppo": ppo, "crl": crl}}}))
    assert all(c.met is False for c in checks.values())
    assert "no CRL seed reached it" in checks["reaches PPO's mean final success in <= 0.6x the steps"].measured


def test_suites_without_both_arms_are_skipped():
    assert check_all({"easy": {"T": {"ppo": [run(0, 1.0, to90=1)]}}, "ablations": {}}) == []


def test_steps_to_level_needs_a_full_window_of_episodes():
    r = {"curve": [{"steps": 1024, "episodes": 99, "outcome": 1.0}, {"steps": 2048, "episodes": 100, "outcome": 1.0}]}
    assert steps_to_level(r, 1.0) == 2048
    assert steps_to_level(r, 1.0, min_episodes=200) is None


def test_overhead_checks_read_the_result_file(tmp_path):
    path = tmp_path / "overhead.json"
    path.write_text(json.dumps({"summary": {
        "E": {"ratio_to_ppo": {"ppo": 1.0, "crl": 0.95, "crl-same-net": 0.8},
              "async_vs_sync_wall": 0.6, "process_vs_sync_wall": 0.85, "sync_manager_share": 0.5},
        "F": {"ratio_to_ppo": {"ppo": 1.0}, "process_vs_sync_wall": 0.5, "sync_manager_share": 0.1}}}))
    checks = {(c.task, c.target): c for c in check_overhead(path)}
    assert checks["E", "`crl` steps/s >= 0.9x its PPO's"].met is True
    assert checks["E", "`crl-same-net` steps/s >= 0.9x its PPO's"].met is False
    assert checks["E", "async (thread) wall-clock <= 0.8x sync (manager share of sync 50%)"].met is True
    assert checks["E", "learner process wall-clock <= 0.8x sync (manager share of sync 50%)"].met is False
    # below a 30 % share the ratio is reported, not judged
    assert checks["F", "learner process wall-clock vs sync, reported (manager share of sync 10%, below 30%)"].met is None
    assert check_overhead(tmp_path / "missing.json") == []


def test_render_marks_missed_targets():
    lines = render_checks([Check("easy", "T", "t1", "m", False, "5 / 5"), Check("easy", "T", "t2", "m", None)])
    assert lines[2].endswith("| **no** |") and lines[3].endswith("| undecided |")
    assert render_checks([])[0].startswith("(no suite")


@pytest.mark.parametrize("values", [[0.1, 0.9, 0.5, 0.7], [3.0, 4.0]])
def test_bootstrap_ci_brackets_the_mean(values):
    lo, hi = bootstrap_ci(values)
    assert min(values) <= lo <= sum(values) / len(values) <= hi <= max(values)
    assert bootstrap_ci(values) == (lo, hi)  # seeded
    assert all(math.isnan(x) for x in bootstrap_ci(values[:1]))


def test_medium_speed_is_measured_against_when_ppo_first_got_there():
    # PPO passes its final level early and falls back: beating the budget would be trivial
    ppo = [run(s, 0.1, curve=[(20_000, 0.5), (300_000, 0.1)]) for s in range(5)]
    crl = [run(s, 0.3, curve=[(16_000, 0.3), (300_000, 0.3)]) for s in range(5)]
    check = by_target(check_all({"medium": {"T": {"ppo": ppo, "crl": crl}}}))[
        "reaches PPO's mean final success in <= 0.6x the steps"]
    assert check.met is False and "0.80x" in check.measured and "first reached by PPO at 20k" in check.measured


def test_stretch_is_checked_on_the_demonstrations_arm():
    ppo = [run(s, 0.0, steps=500_000) for s in range(2)]
    crl = [run(s, 0.3, steps=500_000) for s in range(2)]  # the plain crl arm is not the stretch method
    assert check_all({"stretch": {"T": {"ppo": ppo, "crl": crl}}}) == []
    demos = [run(s, 0.2 * s, steps=500_000) for s in range(2)]
    [check] = check_all({"stretch": {"T": {"ppo": ppo, "crl-demos": demos}}})
    assert "crl-demos" in check.target and check.met is True and check.measured.startswith("0.100")
    [none] = check_all({"stretch": {"T": {"ppo": ppo, "crl-demos": [run(0, 0.0, steps=500_000)]}}})
    assert none.met is False


def test_keyroom_peer_targets_need_a_lead_with_its_ci_above_zero():
    def with_eval(r: dict, without: float) -> dict:
        return {**r, "evaluation": {"without_experience": {"success": without}}}

    method = [with_eval(run(s, 0.95 + 0.01 * (s % 2)), 0.9) for s in range(3)]
    arms = {"crl-sil-obs": method,
            "ppo-bc": [run(s, 0.3 + 0.05 * s) for s in range(3)],          # far below: met
            "ppo-kickstart": [run(s, f) for s, f in enumerate((0.9, 1.0, 0.97))],  # a tie: not met
            "ppo": [run(s, 0.0) for s in range(3)]}
    checks = by_target(check_all({"keyroom-20-300k": {"T": arms}}))
    assert checks["sustained success (last 100 episodes) >= 0.8"].met is True
    assert checks["evaluated without experience >= 0.6"].met is True
    assert checks["above `ppo-bc` (final success, 95 % CI of the difference above 0)"].met is True
    assert checks["above `ppo-kickstart` (final success, 95 % CI of the difference above 0)"].met is False
    assert checks["above `ppo-sil`"].met is None and checks["above `ppo-sil`"].measured == "not run"
    assert checks["vanilla PPO stays near 0 (mean final success <= 0.05)"].met is True
    few = by_target(check_all({"keyroom-20-300k": {"T": {**arms, "crl-sil-obs": method[:2]}}}))
    assert few["sustained success (last 100 episodes) >= 0.8"].met is False  # 2 seeds < 3


def test_check_all_reads_every_overhead_file(tmp_path):
    paths = []
    for env, ratio in (("E", 0.95), ("F", 0.5)):
        paths.append(tmp_path / f"{env}.json")
        paths[-1].write_text(json.dumps({"summary": {env: {"ratio_to_ppo": {"ppo": 1.0, "crl": ratio}}}}))
    checks = {c.task: c.met for c in check_all({}, paths)}
    assert checks == {"E": True, "F": False}
    assert [c.task for c in check_all({}, paths[0])] == ["E"]  # one path, as before
