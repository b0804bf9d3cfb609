"""Fixtures for every test path (``tests/``, the modules' and the docs' doctests).

A manager left at ``mode="auto"`` runs its learner on a thread here (``"async"``), not in a
process of its own: a learner process costs a second or two to start, and hundreds of tests
and doc examples build managers without caring where the learner runs. Tests of the default
itself carry ``@pytest.mark.default_mode`` (and scripts run as subprocesses, such as the
examples and the learner process's own tests, resolve it as in use); a test that asks for
``mode="process"`` gets it.
"""

import pytest


@pytest.fixture(autouse=True)
def _auto_mode_on_a_thread(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    if request.node.get_closest_marker("default_mode") is not None:
        return
    from experience_wrappers.manager import manager as manager_module

    resolve = manager_module.resolve_mode
    monkeypatch.setattr(manager_module, "resolve_mode",
                        lambda mode, *args: "async" if mode == "auto" else resolve(mode, *args))
