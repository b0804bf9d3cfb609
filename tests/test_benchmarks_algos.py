"""--algo: the runner trains A2C and RecurrentPPO too; arms that need PPO's own pieces are refused."""

from __future__ import annotations

import pytest

from benchmarks.harness.algos import check_algo_arm
from benchmarks.harness.run import train_run
from benchmarks.harness.runner import main
from benchmarks.suites.arms import ARMS

HYPER = {"n_envs": 2, "n_steps": 64, "batch_size": 64, "n_epochs": 1}


@pytest.mark.parametrize("algo", ["a2c", "recurrent-ppo"])
def test_train_run_with_another_algorithm(algo):
    pytest.importorskip("sb3_contrib")
    res = train_run("CartPole-v1", ARMS["crl"], 0, HYPER, total_steps=512, eval_episodes=2, algo=algo)
    assert res["algo"] == algo and res["total_steps"] >= 512
    assert res["crl"]["manager"]["episodes_submitted"] > 0
    assert res["evaluation"]["with_experience"]["episodes"] == 2


def test_arms_that_need_ppo_are_refused_before_any_run(tmp_path, capsys):
    with pytest.raises(ValueError, match="self-imitation"):
        check_algo_arm("recurrent-ppo", ARMS["crl-sil-obs"])
    check_algo_arm("a2c", ARMS["crl"])  # nothing of PPO's own: fine for A2C
    with pytest.raises(SystemExit):
        main(["--env", "CartPole-v1", "--algo", "maskable-ppo", "--arms", "crl-sil-obs", "--results", str(tmp_path)])
    assert "self-imitation" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
