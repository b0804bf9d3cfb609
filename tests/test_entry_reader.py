"""One reader of shown entries for both scopes: ``ExperienceFeaturesExtractor`` reads a task
scope's keys and a run scope's rows; run scope's measured reader (``TrialsFeaturesExtractor``) is
one of its settings, and a model saved before the two were one still loads."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium import spaces
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

from experience_wrappers.trials.checks import ENTRIES_KEY, MASK_KEY
from experience_wrappers.wrappers.spaces import EXPERIENCE_KEYS
from integrations.sb3.experience_features import ENTRY_LAYOUTS, ExperienceFeaturesExtractor
from integrations.sb3.trials_features import TrialsFeaturesExtractor

K, ROW = 4, 7
RUN_SPACE = spaces.Dict({"pos": spaces.Box(-1.0, 1.0, (3,), np.float32),
                         ENTRIES_KEY: spaces.Box(-np.inf, np.inf, (K, ROW), np.float32),
                         MASK_KEY: spaces.Box(0.0, 1.0, (K,), np.float32)})


def _batch(n: int = 5, seed: int = 0) -> dict[str, torch.Tensor]:
    rng = np.random.default_rng(seed)
    mask = (rng.random((n, K)) < 0.6).astype(np.float32)
    mask[0] = 0.0  # nothing shown
    return {"pos": torch.as_tensor(rng.uniform(-1, 1, (n, 3)).astype(np.float32)),
            ENTRIES_KEY: torch.as_tensor(rng.normal(size=(n, K, ROW)).astype(np.float32)),
            MASK_KEY: torch.as_tensor(mask)}


class _Linear(BaseFeaturesExtractor):
    """A base extractor with parameters of its own (the old reader called it ``encoder``)."""

    def __init__(self, space: spaces.Dict) -> None:
        super().__init__(space, features_dim=6)
        self.net = nn.Linear(3, 6)

    def forward(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        return self.net(obs["pos"])


def test_the_run_scope_reader_is_the_one_reader_with_run_scopes_settings():
    torch.manual_seed(0)
    one = ExperienceFeaturesExtractor(RUN_SPACE, attn_dim=16, base_width=16, max_pool=True)
    torch.manual_seed(0)
    run = TrialsFeaturesExtractor(RUN_SPACE, hidden=16)
    assert isinstance(run, ExperienceFeaturesExtractor) and one.scope == run.scope == "run"
    x = _batch()
    with torch.no_grad():
        out = run(x)
        torch.testing.assert_close(one(x), out, rtol=0, atol=0)
    assert out.shape == (5, 16 + 2 * 16 + 1) and out[:, -1].tolist() == (x[MASK_KEY].amax(1) > 0).float().tolist()
    assert torch.all(out[0, 16:-1] == 0)  # nothing shown: both pools are zeros


def test_hidden_slots_change_nothing_and_shown_ones_do():
    reader = TrialsFeaturesExtractor(RUN_SPACE, hidden=8)
    x = _batch(seed=1)
    changed = {k: v.clone() for k, v in x.items()}
    changed[ENTRIES_KEY][x[MASK_KEY] < 0.5] += 100.0
    with torch.no_grad():
        torch.testing.assert_close(reader(changed), reader(x))
        shown = torch.nonzero(x[MASK_KEY] > 0.5)[0]
        changed[ENTRIES_KEY][shown[0], shown[1]] += 1.0
        assert not torch.allclose(reader(changed), reader(x))


def test_a_model_saved_before_the_readers_were_one_loads():
    new = TrialsFeaturesExtractor(RUN_SPACE, hidden=8, base_extractor_class=_Linear)
    old_names = {k.replace("base.", "encoder.", 1) if k.startswith("base.") else
                 k.replace("project.0.", "base.0.", 1) if k.startswith("project.0.") else k: v
                 for k, v in new.state_dict().items()}
    assert "encoder.net.weight" in old_names and "base.0.weight" in old_names
    loaded = TrialsFeaturesExtractor(RUN_SPACE, hidden=8, base_extractor_class=_Linear)
    loaded.load_state_dict(old_names)
    x = _batch(seed=2)
    with torch.no_grad():
        torch.testing.assert_close(loaded(x), new(x), rtol=0, atol=0)
    plain = TrialsFeaturesExtractor(RUN_SPACE, hidden=8)
    plain.load_state_dict(plain.state_dict())  # today's names load as they are


def test_the_task_layout_is_the_wrappers_experience_keys():
    assert set(ENTRY_LAYOUTS["task"]) == set(EXPERIENCE_KEYS)
    assert None not in ENTRY_LAYOUTS["run"][:2] and ENTRY_LAYOUTS["run"][2] is None  # run rows carry no utility


def test_a_space_without_entries_is_refused_by_both_names():
    with pytest.raises(ValueError, match="scope=.run."):
        ExperienceFeaturesExtractor(spaces.Dict({"pos": RUN_SPACE["pos"]}))
    with pytest.raises(ValueError, match="scope=.run."):
        TrialsFeaturesExtractor(spaces.Dict({"pos": RUN_SPACE["pos"]}))
