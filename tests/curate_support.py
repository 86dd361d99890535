"""Helpers of the curation tests (tests/curate/): conf/curate.yaml composed with the tiny judge, synthetic and
hand-built pairs, and reading the JSONL files a run writes."""

from __future__ import annotations

import json
from pathlib import Path

from hydra import compose, initialize_config_dir

from judge_rl.config import ModelConfig
from judge_rl.data.loaders import load_dataset_pairs, write_pairs
from judge_rl.data.pairs import PreferencePair
from judge_rl.prompts import get_prompt

from conftest import CACHE_DIR, CONF_DIR

FAMILIES = ["arithmetic", "counting", "unit_conversion", "string_manipulation"]
TINY_MODEL = ModelConfig(name="tiny-random", source="tiny_random", gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf")
# the tiny judge, 2 samples of 8 tokens per pair: seconds
TINY = ["model=tiny-random", "device=cpu", "difficulty.samples=2", "difficulty.max_new_tokens=8"]
STRENGTH = get_prompt("strength")


def compose_curate(overrides: list[str]):
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(config_name="curate", overrides=[f"cache_dir={CACHE_DIR}", *overrides])


def synthetic(n: int = 8) -> list[PreferencePair]:
    return list(load_dataset_pairs("synthetic", n=n, seed=0, split="train", reference=True, families=FAMILIES))


def from_file(path: Path) -> list[str]:
    """Overrides that curate a `pairs` file (the synthetic kwargs are replaced, not merged)."""
    return ["data.loader=pairs", "~data.kwargs", f"+data.kwargs={{path: '{path}'}}"]


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


QUESTIONS = [
    "What is 172 + 478?",
    "Count the letter 'r' in the word 'stream'.",
    "What is 172 + 478?",  # identical to 0
    "Name three mammals that live in the ocean.",
    "Count the letter 'r' in the word 'stream'?",  # near-duplicate of 1
    "How many minutes are in 3 hours?",
    "Translate 'good morning' into French.",
    "Write a haiku about autumn leaves.",
]


def hand_built(tmp_path: Path) -> Path:
    pairs = [PreferencePair(f"q{i}", "hand", q, f"good answer {i}", f"bad answer {i}", 2) for i, q in enumerate(QUESTIONS)]
    return write_pairs(pairs, tmp_path / "questions.jsonl")
