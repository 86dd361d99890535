"""What the TRL stages share (judge_rl/updates/trl_run.py), through the real command line: the SFT stage shows its
progress as a few readable lines (step, loss, rate) where the output is not a terminal, never TRL's raw per-step
dicts or the libraries' per-file bars. On the main before this, every step printed
`{'loss': '2.044', 'grad_norm': '9.118', ...}`."""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys

from conftest import CACHE_DIR, REPO_ROOT, TINY_RUN


def test_the_sft_stage_prints_progress_lines_not_raw_dicts(tmp_path):
    overrides = [*TINY_RUN, "stages=[sft]", "sft.num_examples=16", "sft.batch_size=2", f"cache_dir={CACHE_DIR}",
                 f"run_dir={tmp_path / 'run'}", f"seed={random.SystemRandom().randrange(10**9)}"]  # a seed never used (not the global random, which other tests seed): SFT trains
    out = subprocess.run([sys.executable, "-m", "judge_rl", *overrides], cwd=REPO_ROOT, capture_output=True, text=True,
                         env={**os.environ, "PYTHONWARNINGS": "ignore"}, timeout=600)  # fmt: skip
    text = out.stdout + out.stderr
    assert out.returncode == 0, text[-3000:]
    assert "{'loss'" not in text and "'grad_norm'" not in text and "train_runtime" not in text
    assert "Loading weights" not in text and "Tokenizing train dataset" not in text
    lines = re.findall(r"^sft (\d+)/(\d+)  loss (\d+\.\d+)  (\d+\.\d+) s/step$", text, re.M)
    assert lines, text[-3000:]
    total = int(lines[-1][1])
    assert int(lines[-1][0]) == total and 1 < len(lines) <= 9  # about 8 lines, the last at the last step
    assert re.search(r"^sft: \d+ steps, loss \d+\.\d+ -> \d+\.\d+", text, re.M)


def test_sft_in_bfloat16_trains_float32_master_weights(tmp_path):
    """model.dtype=bfloat16: TRL trains in mixed precision (bf16=True over float32 weights) and saves float32
    weights; a step far below a bf16 weight's resolution still moves nearly every weight (pure bf16 lost it)."""
    import torch
    from safetensors.torch import load_file

    from judge_rl.data import generate_pairs
    from judge_rl.data.pairs import balanced_positions
    from judge_rl.jobs.train import to_job_config
    from judge_rl.models.loading import load_model
    from judge_rl.prompts import get_prompt
    from judge_rl.updates.sft import run_sft, sft_examples
    from conftest import compose_config

    job = to_job_config(compose_config([*TINY_RUN, "model.dtype=bfloat16", "sft.lr=1e-6", "sft.warmup_ratio=0",
                                        f"run_dir={tmp_path / 'run'}",
                                        f"cache_dir={CACHE_DIR}", "sft.batch_size=4"]))  # fmt: skip
    examples = sft_examples(balanced_positions(generate_pairs(4, seed=0), seed=0), get_prompt("strength"), limit=4)
    target, metrics = run_sft(job, examples, output_root=tmp_path)
    assert metrics["sft/steps"] == 1 and "sft/reused" not in metrics
    trained = load_file(str(next(target.glob("*.safetensors"))))
    assert {t.dtype for t in trained.values()} == {torch.float32}
    init = load_model(job.model, job.cache_dir, torch.device("cpu"), seed=job.seed, train=True).state_dict()
    shared = [k for k in trained if k in init]
    moved = sum(int((trained[k] != init[k]).sum()) for k in shared)
    assert moved / sum(trained[k].numel() for k in shared) > 0.9
