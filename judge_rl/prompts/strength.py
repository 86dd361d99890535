"""Think-J's strength judge prompt (Huang et al., 2025, "Think-J: Learning to Think for Generative
LLM-as-a-Judge"): the judge thinks inside <think>...</think>, then names the better response and how
much better it is, on a 1-3 scale, in a fixed final line that a strict parser reads.
"""

from __future__ import annotations

VERDICT_TEMPLATE = "Therefore, Response ({winner}) is better, and the strength is [[{strength}]]."


def verdict_line(winner: str, strength: int) -> str:
    """The exact final line a strength judge must write (gold traces end with it)."""
    if winner not in ("a", "b"):
        raise ValueError(f"winner must be 'a' or 'b', got {winner!r}")
    if strength not in (1, 2, 3):
        raise ValueError(f"strength must be 1, 2 or 3, got {strength!r}")
    return VERDICT_TEMPLATE.format(winner=winner, strength=strength)
