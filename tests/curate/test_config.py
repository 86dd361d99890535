"""judge_rl/curate/config.py: a bad conf/curate.yaml fails in `to_curate_config`, before anything loads, with one
line naming the key."""

from __future__ import annotations

import re

import pytest

from judge_rl.curate.config import to_curate_config
from judge_rl.jobs.curate import run_curate

from curate_support import TINY, compose_curate

@pytest.mark.parametrize(
    "overrides, message",
    [
        (["data.loader=nope"], "data.loader: unknown loader 'nope'; known loaders: "),
        (["+data.kwargs.nn=3"], "data.kwargs.nn: loader 'synthetic' has no argument 'nn'"),
        (["accuracy.teacher=server"], "accuracy.server.base_url: teacher=server needs the endpoint's URL"),
        (["accuracy.teacher=server", "accuracy.server.base_url=http://127.0.0.1:9/v1"], "accuracy.server.served_model: "),
        (["accuracy.teacher=checkpoint"], "accuracy.checkpoint: teacher=checkpoint needs the teacher's model directory"),
        (["accuracy.teacher=checkpoint", "accuracy.checkpoint=/no/such/dir"], "accuracy.checkpoint=/no/such/dir: no such directory"),
        (["accuracy.teacher=oracle"], "accuracy.teacher='oracle': expected one of gold, server, checkpoint"),
        (["diversity.threshold=1.5"], "diversity.threshold=1.5: expected (0, 1]"),
        (["diversity.threshold=0"], "diversity.threshold=0.0: expected (0, 1]"),
        (["diversity.embedder=/no/such/embedder"], "diversity.embedder=/no/such/embedder: no such directory"),
        (["difficulty.samples=0"], "difficulty.samples=0: expected >= 1"),
        (["difficulty.checkpoint=/no/ckpt"], "difficulty.checkpoint=/no/ckpt: no such directory"),
        (["limit=0"], "limit=0: expected >= 1"),
        (["prompt=pointwise"], "prompt='pointwise': curation judges pairs"),
        (["prompt=rewardbench_pairwise"], "prompt='rewardbench_pairwise': its judgments have no <think> block"),
        (["prompt=nope"], "prompt='nope': unknown prompt 'nope'"),
        (["output=/tmp/x.json"], "output='/tmp/x.json': the curated pairs are JSON lines"),
    ],
)
def test_a_bad_config_fails_before_anything_loads_naming_the_key(tmp_path, overrides, message):
    run = tmp_path / "run"
    cfg = compose_curate([*TINY, f"run_dir={run}", *overrides])
    with pytest.raises(ValueError, match=re.escape(message)):
        to_curate_config(cfg)
    with pytest.raises(ValueError):
        run_curate(cfg)
    assert not run.exists()
