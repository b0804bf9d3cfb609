"""CRLCallback on other SB3 on-policy algorithms: A2C, and sb3-contrib's RecurrentPPO and MaskablePPO
(action masks reach MaskablePPO through the experience wrappers)."""

from __future__ import annotations

import csv

import numpy as np
import pytest
from stable_baselines3 import A2C
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.logger import configure

from experience_wrappers import ExperienceBank, ExperienceWrapper
from integrations.sb3 import CRLCallback, ExperienceVecEnv, find_experience

sb3_contrib = pytest.importorskip("sb3_contrib", reason="the sb3 extra: pip install 'complementary-rl[sb3]'")
from sb3_contrib import MaskablePPO, RecurrentPPO  # noqa: E402
from sb3_contrib.common.envs import InvalidActionEnvDiscrete  # noqa: E402

FAST = {"mode": "sync", "batch_size": 16, "ssl_batch_size": 16}


def masked_env() -> InvalidActionEnvDiscrete:
    return InvalidActionEnvDiscrete(dim=8, n_invalid_actions=4)


def train_and_read_log(algo, policy, venv, tmp_path, steps=2048, **kwargs) -> dict[str, list[float]]:
    model = algo(policy, venv, n_steps=64, seed=0, device="cpu", **kwargs)
    model.set_logger(configure(str(tmp_path), ["csv"]))
    learn_kwargs = {"log_interval": 1} if algo is A2C else {}
    model.learn(steps, callback=CRLCallback(), **learn_kwargs)
    with open(tmp_path / "progress.csv") as f:
        rows = list(csv.DictReader(f))
    return {k: [float(r[k]) for r in rows if r.get(k)] for k in rows[-1]}


def wrapped(env_id, n_envs=2, **kwargs):
    return make_vec_env(env_id, n_envs=n_envs, seed=0, wrapper_class=ExperienceWrapper,
                        wrapper_kwargs={"bank": ExperienceBank(), "manager_kwargs": FAST, **kwargs})


def check_crl_metrics(log: dict[str, list[float]], venv) -> None:
    mgr = find_experience(venv)[0][0]
    assert mgr.episodes_submitted > 0 and len(mgr.bank) > 0
    assert log["bank/size"][-1] == len(mgr.bank) or log["bank/size"][-1] > 0
    assert log["extractor/updates"][-1] > 0
    assert log["crl/guided_ratio"] and 0.5 <= log["crl/guided_ratio"][-1] <= 0.8
    assert log["crl/free_return"] or log["crl/guided_return"]


def test_a2c(tmp_path):
    venv = wrapped("CartPole-v1")
    log = train_and_read_log(A2C, "MultiInputPolicy", venv, tmp_path, policy_kwargs={"net_arch": [16]})
    check_crl_metrics(log, venv)


def test_recurrent_ppo(tmp_path):
    venv = wrapped("CartPole-v1")
    log = train_and_read_log(RecurrentPPO, "MultiInputLstmPolicy", venv, tmp_path, batch_size=64, n_epochs=1,
                             policy_kwargs={"lstm_hidden_size": 16, "net_arch": [16]})
    check_crl_metrics(log, venv)


@pytest.mark.parametrize("vec", [False, True], ids=["ExperienceWrapper", "ExperienceVecEnv"])
def test_maskable_ppo_reads_the_action_masks_through_the_experience_wrappers(tmp_path, vec):
    if vec:
        venv = ExperienceVecEnv(make_vec_env(masked_env, n_envs=2, seed=0), ExperienceBank(), manager_kwargs=FAST)
    else:
        venv = wrapped(masked_env)
    log = train_and_read_log(MaskablePPO, "MultiInputPolicy", venv, tmp_path, batch_size=64, n_epochs=1,
                             policy_kwargs={"net_arch": [16]})
    check_crl_metrics(log, venv)
    model = MaskablePPO("MultiInputPolicy", venv, n_steps=64, batch_size=64, policy_kwargs={"net_arch": [16]})
    for inj in find_experience(venv)[1]:
        inj.force_guided = True
    obs = venv.reset()
    shown = 0
    for _ in range(30):
        masks = np.stack(venv.env_method("action_masks"))
        actions, _ = model.predict(obs, action_masks=masks)
        assert np.all(masks[np.arange(len(masks)), actions])  # the masks reach the policy: never a masked action
        shown += int((obs["experience_mask"].sum(-1) > 0).sum())
        obs, *_ = venv.step(actions)
    assert shown > 0  # guided episodes did show experience
