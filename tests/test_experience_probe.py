"""The experience channel carries information: a probe reads the next action from stored vectors.

Entries distilled from a scripted solver's episodes (one per demonstrated state) are
retrieved at those states; a linear probe from the retrieved experience vector to the
action the solver took there must beat the majority class by a wide margin. When the
stored vector was the extractor's sampled ``z`` (a mean of norm ~0.01 under noise of
std ~0.6), the same probe scored below the majority class.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from experience_wrappers import ExperienceBank, ExperienceWrapper
from integrations.demos import ingest_demonstrations

minihack = pytest.importorskip("integrations.minihack")


def _probe_accuracy(x: np.ndarray, y: np.ndarray, n_classes: int, seed: int = 0) -> tuple[float, float]:
    """Held-out accuracy of a linear softmax probe, and of the majority class, on a 70/30 split."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(x))
    cut = int(0.7 * len(x))
    tr, te = order[:cut], order[cut:]
    torch.manual_seed(seed)
    xt = torch.as_tensor(x, dtype=torch.float32)
    yt = torch.as_tensor(y, dtype=torch.int64)
    probe = torch.nn.Linear(x.shape[1], n_classes)
    opt = torch.optim.Adam(probe.parameters(), lr=0.05, weight_decay=1e-4)
    for _ in range(300):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(probe(xt[tr]), yt[tr]).backward()
        opt.step()
    with torch.no_grad():
        acc = float((probe(xt[te]).argmax(-1) == yt[te]).float().mean())
    majority = float(np.mean(y[te] == np.bincount(y[tr], minlength=n_classes).argmax()))
    return acc, majority


def test_a_linear_probe_reads_the_next_action_from_the_experience_vector() -> None:
    env_id = "MiniHack-KeyRoom-S5-v0"  # ten actions in use: moves, PICKUP, APPLY
    demos = minihack.scripted_demonstrations(env_id, 40, seed=0)
    env = minihack.make_minihack_env(env_id, seed=0)
    wrapper = ExperienceWrapper(env, ExperienceBank(seed=0), key_encoder=minihack.MiniHackKeyEncoder(env.observation_space),
                                manager_kwargs={"mode": "sync", "extractor": {"seed": 0}})
    manager = wrapper.manager
    ingest_demonstrations(manager, demos, segment_every=1)
    states = {k: np.concatenate([d.observations[k] for d in demos]) for k in demos[0].observations}
    actions = np.concatenate([d.actions for d in demos]).astype(np.int64)
    keys = manager.encode_keys(states, np.zeros(len(actions), np.int64))
    res = manager.bank.query(keys, 1, mode="knn", record=False)
    assert res.mask[:, 0].all() and np.allclose(res.distances[:, 0], 0.0, atol=1e-4)  # each state finds its entry
    values = res.values[:, 0]
    assert np.all(np.isfinite(values))
    rms = np.sqrt((values ** 2).mean(axis=1))
    assert np.median(rms) > 0.5, "stored vectors must carry signal at a visible scale"
    acc, majority = _probe_accuracy(values, actions, env.action_space.n)
    wrapper.close()
    assert acc > majority + 0.2, (acc, majority)
