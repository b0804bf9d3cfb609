"""Doctest namespace for the docs pages."""

import pytest


@pytest.fixture(autouse=True)
def _docs_namespace(doctest_namespace):
    from integrations.sb3 import find_experience

    def find_bank(venv):
        return find_experience(venv)[0][0].bank

    doctest_namespace["find_bank"] = find_bank
    import torch

    torch.set_num_threads(1)
