"""Docs pages run as doctests, each in its own namespace (no helpers injected: every snippet is
self-contained); one torch thread keeps them fast."""

import pytest


@pytest.fixture(autouse=True)
def _one_torch_thread():
    import torch

    torch.set_num_threads(1)
