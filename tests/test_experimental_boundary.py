"""The parts measured to tie sit outside the main path: nothing there imports them; the parts
measured to tie or hurt that were removed are refused by name."""

from __future__ import annotations

import subprocess
import sys

import pytest

from experience_wrappers import ExperienceOptions
from integrations.sb3 import CRLCallback


def test_the_main_path_imports_no_experimental_module():
    code = ("import sys, experience_wrappers, integrations.sb3\n"
            "bad = sorted(m for m in sys.modules if m.startswith(('integrations.sb3.experimental', "
            "'experience_wrappers.experimental')))\n"
            "assert not bad, bad\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_removed_value_baseline_and_neighbour_imitation_are_gone_and_say_why():
    with pytest.raises(TypeError, match=r"value_baseline was removed: .*no closer to the paired baseline"):
        ExperienceOptions.of(value_baseline=True)
    import integrations.sb3.experimental as experimental

    assert experimental.__all__ == ["CompactExperienceVecEnv", "RetrievalMixPolicy"]
    assert not hasattr(experimental, "NeighbourImitationCallback")
    assert not hasattr(CRLCallback, "_step_hook") and not hasattr(CRLCallback, "_setup_hook")
