"""judge_rl/curate/traces.py: a teacher's output read as a trace in the prompt's format (`clip_trace`, rules a-f)."""

from __future__ import annotations

from judge_rl.curate.traces import NO_VERDICT_AFTER_REASONING, NOTHING_TO_KEEP, ClippedTrace, clip_trace, tail_at_sentence

from curate_support import STRENGTH, synthetic

R1_OUTPUT = """<think>
Okay, let me look at the question first. The user asks for 172 + 478. Let me add: 172 + 478. 100 + 400 = 500, 72 + 78 = 150, so 650.
Hmm, wait. Let me double-check: 478 + 172 = 650. Yes. Response (a) says 650. Response (b) says 688, off by 38. So (a) is right.
</think>

Response (a) computes the sum correctly (650), while Response (b) gives 688, which is off by 38.

Therefore, Response (a) is better, and the strength is [[2]]."""


def test_clip_keeps_the_final_explanation_of_an_r1_style_output():
    assert not STRENGTH.parse(R1_OUTPUT).ok  # the explanation between </think> and the verdict breaks the format
    read = clip_trace(R1_OUTPUT, STRENGTH, 2000)
    assert read.clipped and read.error is None
    assert read.trace == ("<think>\nResponse (a) computes the sum correctly (650), while Response (b) gives 688, which "
                          "is off by 38.\n</think>\nTherefore, Response (a) is better, and the strength is [[2]].")
    assert STRENGTH.parse(read.trace).winner == "a"
    # an explanation longer than the budget keeps its end, from a sentence start
    long = R1_OUTPUT.replace("Response (a) computes", "First point. Second point is here. Response (a) computes")
    clipped = clip_trace(long, STRENGTH, 100).trace
    assert clipped.startswith("<think>\nResponse (a) computes") or clipped.startswith("<think>\nSecond point")
    thinking = clipped.split("<think>\n", 1)[1].split("\n</think>", 1)[0]
    assert len(thinking) <= 100 and thinking[0].isupper()


def test_clip_without_explanation_keeps_the_end_of_the_reasoning_and_without_think_keeps_the_answer():
    no_explanation = R1_OUTPUT.replace(
        "Response (a) computes the sum correctly (650), while Response (b) gives 688, which is off by 38.\n\n", "")
    assert STRENGTH.parse(no_explanation).ok  # R1's reasoning in the prompt's own <think> block: rule a
    trace = clip_trace(no_explanation, STRENGTH, 80).trace  # the last 80 characters, from a sentence start
    assert trace == ("<think>\nYes. Response (a) says 650. Response (b) says 688, off by 38. So (a) is right.\n</think>\n"
                     "Therefore, Response (a) is better, and the strength is [[2]].")
    # not the prompt's format (text before <think>) and no explanation: the end of the reasoning
    preamble = "Sure, here goes. " + no_explanation
    assert STRENGTH.parse(preamble).error == "text before <think>"
    assert clip_trace(preamble, STRENGTH, 20).trace == (
        "<think>\nSo (a) is right.\n</think>\nTherefore, Response (a) is better, and the strength is [[2]].")
    # an API that returns the reasoning apart (DeepSeek's reasoning_content): the answer alone
    answer_only = "Response (b) states the right count.\nTherefore, Response (b) is better, and the strength is [[1]]."
    assert clip_trace(answer_only, STRENGTH, 2000).trace == (
        "<think>\nResponse (b) states the right count.\n</think>\nTherefore, Response (b) is better, and the strength is [[1]].")
    # already in the prompt's format: as it is, its thinking cut when too long
    gold = synthetic(1)[0].traces["a"]
    assert clip_trace(gold, STRENGTH, 5000) == ClippedTrace(gold, None, False)
    assert clip_trace(gold, STRENGTH, 40) == ClippedTrace(
        "<think>\nThe reference 650 is in Response (a).\n</think>\n"
        "Therefore, Response (a) is better, and the strength is [[2]].", None, True)
    # no verdict the prompt reads, or nothing to keep
    assert clip_trace("<think>long</think>\nResponse (a) is best!", STRENGTH, 100).error == NO_VERDICT_AFTER_REASONING
    assert clip_trace("Therefore, Response (a) is better, and the strength is [[2]].", STRENGTH, 100).error == NOTHING_TO_KEEP
    assert clip_trace("<think>\n</think>\n**Therefore, Response (a) is better, and the strength is [[2]].**",
                      STRENGTH, 100).error == NO_VERDICT_AFTER_REASONING


def test_tail_at_sentence():
    text = "One two three. Four five six! Seven eight nine? Ten."
    assert tail_at_sentence(text, 1000) == text
    assert tail_at_sentence(text, 25) == "Seven eight nine? Ten."  # the window starts mid-sentence: cut forward
    assert tail_at_sentence(text, 22) == "Seven eight nine? Ten."  # exactly at a sentence start
    assert tail_at_sentence(text, 21) == "Ten."  # one character short of the last sentence but one
    assert tail_at_sentence("no sentence ends in this long line", 12) == "long line"  # no sentence start: a word start
    assert tail_at_sentence("abcdefghij", 4) == "ghij"
    assert tail_at_sentence("Line one\nline two", 12) == "line two"
