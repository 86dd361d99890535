"""The synthetic generator: determinism, disjoint splits, computed answers, strengths and gold traces."""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict

import pytest

from judge_rl.data.pairs import PreferencePair, balanced_positions, verdict_line
from judge_rl.data.synthetic import FAMILIES, generate_pairs, split_of

NUMERIC = {"arithmetic", "counting", "unit_conversion"}
# (asked unit, given unit) -> answer per given unit
FACTORS = {("minute", "hours"): 60, ("hour", "days"): 24, ("centimeter", "meters"): 100, ("kilogram", "grams"): 0.001}


@pytest.fixture(scope="module")
def train() -> list[PreferencePair]:
    return generate_pairs(500, seed=0, split="train")


@pytest.fixture(scope="module")
def test_split() -> list[PreferencePair]:
    return generate_pairs(500, seed=0, split="test")


def states(text: str, answer: str) -> bool:
    """`answer` occurs in `text` as a whole token (not inside a longer number or word)."""
    return re.search(r"(?<![\w.\-])" + re.escape(answer) + r"(?![\w\-]|\.\w)", text) is not None


def levenshtein(x: list[str] | str, y: list[str] | str) -> int:
    rows = [[i + j if i * j == 0 else 0 for j in range(len(y) + 1)] for i in range(len(x) + 1)]
    for i in range(1, len(x) + 1):
        for j in range(1, len(y) + 1):
            rows[i][j] = min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + (x[i - 1] != y[j - 1]))
    return rows[-1][-1]


def items(pair: PreferencePair, text: str) -> list[str] | str:
    """The unit of the edit distance: letters for strings, items for constraint answers."""
    if pair.meta["family"] != "constraint_following":
        return text
    q = pair.question
    sep = " " if "by spaces" in q else "-" if "hyphens" in q else ", "
    return text.split(sep)


def expected_strength(pair: PreferencePair) -> int:
    """Recomputed here, from the answer and the wrong answer alone."""
    wrong = pair.meta["wrong_answer"]
    if wrong is None:
        return 3
    answer = pair.meta["answer"]
    if pair.meta["family"] in NUMERIC:
        err, size = abs(int(wrong) - int(answer)), abs(int(answer))
        return 1 if err <= max(1, 0.05 * size) else 2 if err <= max(3, 0.3 * size) else 3
    d = levenshtein(items(pair, wrong), items(pair, answer))
    return 1 if d == 1 else 2 if d <= math.ceil(len(items(pair, answer)) / 2) else 3


def test_same_arguments_same_pairs() -> None:
    assert generate_pairs(120, seed=5) == generate_pairs(120, seed=5)
    assert generate_pairs(60, seed=5, split="test") == generate_pairs(60, seed=5, split="test")


def test_different_seeds_different_pairs() -> None:
    a, b = generate_pairs(50, seed=1), generate_pairs(50, seed=2)
    assert sum(x.question == y.question for x, y in zip(a, b)) < 5


def test_shorter_call_is_a_prefix_of_longer_call() -> None:
    assert generate_pairs(40, seed=3) == generate_pairs(100, seed=3)[:40]


def test_train_and_test_share_no_question(train: list[PreferencePair], test_split: list[PreferencePair]) -> None:
    assert len(train) == len(test_split) == 500
    others = generate_pairs(500, seed=1, split="train") + train
    tests = generate_pairs(500, seed=1, split="test") + test_split
    assert not {p.question for p in others} & {p.question for p in tests}
    assert not {p.meta["key"] for p in others} & {p.meta["key"] for p in tests}
    assert all(split_of(p.meta["key"]) == "train" and p.meta["split"] == "train" for p in others)
    assert all(split_of(p.meta["key"]) == "test" and p.meta["split"] == "test" for p in tests)


def test_no_question_repeats_within_a_call(train: list[PreferencePair]) -> None:
    assert len({p.question for p in train}) == len(train)
    assert len({p.pair_id for p in train}) == len(train)


def test_families_round_robin(train: list[PreferencePair]) -> None:
    names = list(FAMILIES)
    assert set(names) == {"arithmetic", "counting", "unit_conversion", "string_manipulation", "constraint_following"}
    assert [p.meta["family"] for p in train] == [names[i % len(names)] for i in range(len(train))]
    assert Counter(p.meta["family"] for p in train) == {name: 100 for name in names}
    for p in train:
        assert p.source == f"synthetic/{p.meta['family']}"
        assert p.pair_id.startswith(f"synthetic-{p.meta['family']}-train-")


def test_family_selection_and_unknown_family() -> None:
    pairs = generate_pairs(10, seed=0, families=["counting", "arithmetic"])
    assert [p.meta["family"] for p in pairs] == ["counting", "arithmetic"] * 5
    with pytest.raises(ValueError, match="unknown synthetic family 'poetry'"):
        generate_pairs(3, seed=0, families=["poetry"])
    with pytest.raises(ValueError, match="split"):
        generate_pairs(3, seed=0, split="validation")


def test_correct_response_states_answer_incorrect_does_not(
    train: list[PreferencePair], test_split: list[PreferencePair]
) -> None:
    for p in train + test_split:
        answer = p.meta["answer"]
        assert states(p.chosen, answer), p
        assert not states(p.rejected, answer), p
        if p.meta["wrong_answer"] is not None:
            assert states(p.rejected, p.meta["wrong_answer"]), p


def test_answers_are_really_computed(train: list[PreferencePair]) -> None:
    checked: Counter[str] = Counter()
    for p in train:
        q, answer = p.question, p.meta["answer"]
        if m := re.fullmatch(r"(?:What is|Compute) (\d+) (\+|-|×|plus|minus|times) (\d+)[?.]", q):
            a, op, b = int(m[1]), m[2], int(m[3])
            expected = {"+": a + b, "plus": a + b, "-": a - b, "minus": a - b, "×": a * b, "times": a * b}[op]
            assert answer == str(expected), q
            checked["arithmetic"] += 1
        elif m := re.fullmatch(r"How many times does the letter '(\w)' appear in '(\w+)'\?", q):
            assert answer == str(m[2].count(m[1])), q
            checked["letter count"] += 1
        elif m := re.fullmatch(r"Reverse the word '(\w+)'\.", q):
            assert answer == m[1][::-1], q
            checked["reverse"] += 1
        elif m := re.fullmatch(r"Write the word '(\w+)' (\d+) times, separated by spaces\.", q):
            assert answer == " ".join([m[1]] * int(m[2])), q
            checked["repeat"] += 1
        elif (m := re.fullmatch(r"How many (\w+)s are in ([\d.]+) (\w+)\?", q)) and (m[1], m[3]) in FACTORS:
            assert float(answer) == float(m[2]) * FACTORS[m[1], m[3]], q
            checked["conversion"] += 1
    assert set(checked) == {"arithmetic", "letter count", "reverse", "repeat", "conversion"}, checked
    assert checked["arithmetic"] == 100


def test_strength_follows_how_wrong(train: list[PreferencePair], test_split: list[PreferencePair]) -> None:
    pairs = train + test_split
    assert all(p.strength in (1, 2, 3) for p in pairs)
    for p in pairs:
        assert p.strength == expected_strength(p), p
    # every family uses the whole scale
    by_family = defaultdict(set)
    for p in pairs:
        by_family[p.meta["family"]].add(p.strength)
    assert all(strengths == {1, 2, 3} for strengths in by_family.values()), by_family
    # and the mean relative error rises with strength
    rel: dict[int | None, list[float]] = defaultdict(list)
    for p in pairs:
        if p.meta["wrong_answer"] is None:
            continue
        if p.meta["family"] in NUMERIC:
            rel[p.strength].append(abs(int(p.meta["wrong_answer"]) - int(p.meta["answer"])) / max(1, int(p.meta["answer"])))
        else:
            rel[p.strength].append(p.meta["error"] / len(items(p, p.meta["answer"])))
    means = [sum(rel[s]) / len(rel[s]) for s in (1, 2, 3)]
    assert means[0] < means[1] < means[2], means


def test_nonanswers_are_strength_three(train: list[PreferencePair]) -> None:
    non_answers = [p for p in train if p.meta["wrong_answer"] is None]
    assert non_answers, "some incorrect responses should be refusals or off-topic"
    assert all(p.strength == 3 and p.meta["error"] is None for p in non_answers)


def test_traces_end_with_verdict_and_check_both_responses(
    train: list[PreferencePair], test_split: list[PreferencePair]
) -> None:
    for p in train + test_split:
        assert p.traces is not None and set(p.traces) == {"a", "b"}
        assert p.strength is not None
        for pos in ("a", "b"):
            trace = p.traces[pos]
            other = "b" if pos == "a" else "a"
            assert trace.startswith("<think>\n")
            think, verdict = trace.split("\n</think>\n")
            assert verdict == verdict_line(pos, p.strength)
            assert trace.endswith(verdict_line(pos, p.strength))
            assert "Response (a)" in think and "Response (b)" in think
            assert f"Response ({pos}) is correct" in think
            assert f"Response ({other}) is correct" not in think
            assert p.meta["answer"] in think or p.meta["family"] == "constraint_following"


def test_judge_items_pick_the_trace_for_their_order(train: list[PreferencePair]) -> None:
    for item in balanced_positions(train[:20], seed=0):
        assert item.trace is not None and item.pair.strength is not None
        assert item.trace.endswith(verdict_line(item.chosen_position, item.pair.strength))


def test_texts_stay_short(train: list[PreferencePair], test_split: list[PreferencePair]) -> None:
    # Character and word bounds that keep every trace under 60 SmolLM2 tokens and every response
    # under ~45 (checked with that tokenizer on 7,500 pairs when the generator was written).
    for p in train + test_split:
        assert len(p.question) <= 120, p.question
        for response in (p.chosen, p.rejected):
            assert len(response) <= 80 and len(response.split()) <= 12, response
        for trace in (p.traces or {}).values():
            assert len(trace) <= 180 and len(trace.split()) <= 30, trace


def test_reference_traces_are_copies_ending_in_a_recall_of_the_reference() -> None:
    """Reference-guided traces: the reference, then "<answer> is in Response (x)." for each response in order
    (a non-answer says what it does instead), then "The reference <answer> is in Response (x)." with x the
    response that states it: the letter a judge can recall from its own earlier line, and the verdict's."""
    for pair in generate_pairs(40, 3, "train", reference=True):
        answer, wrong = pair.meta["answer"], pair.meta["wrong_answer"]
        for pos in ("a", "b"):
            other = "b" if pos == "a" else "a"
            think = pair.traces[pos].split("<think>\n")[1].split("\n</think>")[0]
            lines = {pos: f"{answer} is in Response ({pos})."}
            lines[other] = f"{wrong} is in Response ({other})." if wrong is not None else f"Response ({other}) "
            assert think.startswith(f"Reference: {answer}. ")
            assert think.index(lines["a"]) < think.index(lines["b"])  # read in the order shown
            assert think.endswith(f"The reference {answer} is in Response ({pos}).")
            assert pair.traces[pos].endswith(verdict_line(pos, pair.strength))
