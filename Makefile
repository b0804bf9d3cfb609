# Two commands do all the set-up on a fresh machine:
#   make demo   -- short PPO vs PPO+Complementary RL comparison on a real environment
#   make test   -- the test suite
VENV ?= .venv
PY := $(VENV)/bin/python
PYTHON ?= python3

RLLIB_VENV ?= .venv-rllib

.PHONY: install demo test test-rllib lint clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade "pip>=24" "setuptools<81" wheel
	$(PY) -m pip install torch==2.13.0
	$(PY) -m pip install -e ".[all]"
	touch $@

demo: install
	$(PY) -m benchmarks.suites.demo

test: install
	$(PY) -m pytest

# The RLlib adapter in a virtual environment of its own: RLlib 2.60 pins gymnasium 1.2.2, NLE
# (MiniHack) 1.2.0. Not part of `make test`; CI (.ci/run) runs it after `make test`: PPO on
# CartPole and a Meta-World task with 2 EnvRunners on a local Ray (num_cpus=2).
$(RLLIB_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(RLLIB_VENV)
	$(RLLIB_VENV)/bin/python -m pip install --upgrade "pip>=24" "setuptools<81" wheel
	$(RLLIB_VENV)/bin/python -m pip install torch==2.13.0
	$(RLLIB_VENV)/bin/python -m pip install -e ".[rllib,metaworld,dev]"
	touch $@

test-rllib: $(RLLIB_VENV)/.installed
	CRL_REQUIRE_RLLIB=1 $(RLLIB_VENV)/bin/python -m pytest tests/test_ray_rllib.py

lint: install
	$(VENV)/bin/ruff check .
	$(PY) -m mypy

clean:
	rm -rf $(VENV) $(RLLIB_VENV) build *.egg-info
