"""Judge prompts, by name: each renders a pair as chat messages and strictly parses the judge's reply.

`PROMPTS` maps a name ("strength", "binary", ...) to a `JudgePrompt` instance; importing this
package registers every built-in prompt.
"""

from __future__ import annotations

from judge_rl.prompts.base import PROMPTS, JudgePrompt, Judgment, Message, register_prompt
from judge_rl.prompts import strength as _strength  # noqa: F401  (registers "strength" and "binary")


def get_prompt(name: str) -> JudgePrompt:
    """The registered prompt `name`; an unknown name fails with the list of known ones."""
    return PROMPTS.get(name)


__all__ = ["PROMPTS", "JudgePrompt", "Judgment", "Message", "get_prompt", "register_prompt"]
