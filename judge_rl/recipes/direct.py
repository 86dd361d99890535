"""No training: the prompted judge (Think-J Table 3's "Direct Prompt" rows, with and without CoT).

    setup -> evaluate the model as configured -> report

`algorithm.thinking=false` asks for the verdict line alone (the reward's `<prompt>_direct` variant, the
"w/o CoT" row); true asks with the reward's own thinking prompt. The untrained SmolLM2-135M never writes a
verdict format, so on the embedded default this row is the floor every trained judge is measured against.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judge_rl.config import JobConfig
from judge_rl.recipes import register_recipe
from judge_rl.recipes.stages import evaluate, report, setup, validate_judge_prompt
from judge_rl.rewards import Reward


@dataclass
class DirectConfig:
    """`algorithm=direct`: the model as configured, asked with the judge prompt."""

    name: str = "direct"
    recipe: str = "direct"  # judge_rl/recipes/direct.py
    thinking: bool = True  # false: the verdict-only prompt (Think-J Table 3 "Direct Prompt w/o CoT")


@register_recipe("direct", config=DirectConfig, validate=validate_judge_prompt)
def direct(job: JobConfig, run_dir: Path, reward: Reward) -> dict[str, Any]:
    # setup: data, prompt and benchmarks are checked before the model loads
    run = setup(job, run_dir, reward)
    # the model as configured judges the held-out pairs in both orders (and eval.benchmarks)
    evaluate(run, "base", "direct", None)
    return report(run, final="base")
