"""Preference data: the shared pair types, verifiable synthetic pairs, and loaders for published formats."""

from judge_rl.data.loaders import DATASETS, LoadedPairs, check_loader_kwargs, load_dataset_pairs
from judge_rl.data.pairs import JudgeItem, PreferencePair, balanced_positions, both_orders
from judge_rl.data.synthetic import generate_pairs

__all__ = [
    "DATASETS",
    "JudgeItem",
    "LoadedPairs",
    "PreferencePair",
    "balanced_positions",
    "both_orders",
    "check_loader_kwargs",
    "generate_pairs",
    "load_dataset_pairs",
]
