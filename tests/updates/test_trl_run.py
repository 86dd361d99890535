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
                 f"run_dir={tmp_path / 'run'}", f"seed={random.randrange(10**6)}"]  # a seed never used: SFT trains, not reused
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
