# The two set-up commands of the README: `make demo` and `make test`. Both build everything they need from a
# fresh checkout (a virtual environment in .venv, the generated protocol code).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test install proto clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP) proto

proto: $(STAMP)
	$(PY) -m policy_engine.proto

demo: install
	$(VENV)/bin/policy-engine demo

test: install
	$(PY) -m pytest -q

clean:
	rm -rf $(VENV) policy_engine/_generated
