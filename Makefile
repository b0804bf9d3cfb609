# Two commands do all the set-up on a fresh machine:
#   make demo   -- short PPO vs PPO+Complementary RL comparison on a real environment
#   make test   -- the test suite
VENV ?= .venv
PY := $(VENV)/bin/python
PYTHON ?= python3

.PHONY: install demo test lint clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade "pip>=24" "setuptools<81" wheel
	$(PY) -m pip install torch==2.13.0
	$(PY) -m pip install -e ".[all]"
	touch $@

demo: install
	$(PY) -m benchmarks.demo

test: install
	$(PY) -m pytest

lint: install
	$(VENV)/bin/ruff check .

clean:
	rm -rf $(VENV) build *.egg-info
