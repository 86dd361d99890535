"""Verifiable synthetic preference pairs: small questions whose answer is computed, not labelled.

Why: a 135M judge trained on a CPU needs short, cheap, unambiguous data whose gold preference,
preference strength and judgment trace are all known by construction, with no network. Each
question family (arithmetic, counting, unit conversion, string manipulation, constraint following)
computes the answer, writes a correct response stating it and an incorrect one whose error has a
measured magnitude; the strength (1..3) is derived from that magnitude, never chosen by hand:

- numbers: off by at most max(1, 5% of the answer) -> 1, at most max(3, 30%) -> 2, more -> 3;
- strings and item lists: edit distance 1 -> 1, at most half the answer's length -> 2, more -> 3;
- a refusal, an off-topic reply or no answer at all -> 3.

Train and test never share a problem: the split of a problem is a hash of its canonical key (for
example ``add:37:48``, the same for "What is 37 + 48?" and "Compute 48 plus 37."), so whatever
`n` and `seed`, a question generated for one split can never be generated for the other.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from judge_rl.data.pairs import PreferencePair, percent_of, verdict_line

SPLITS = ("train", "test")
TEST_PERCENT = 20  # share of the problem space held out for the "test" split
MAX_DRAWS = 20_000  # draws without a usable new problem before a family is declared exhausted


@dataclass(frozen=True)
class Problem:
    """One generated question with a correct and an incorrect response.

    key: canonical identity of the problem (the split is hashed from it).
    solution: the first sentence of the gold trace, stating the computed answer ("Answer: 85.") or,
        for constraint following, what the instruction requires ("It needs 6 numbers.").
    correct_note / incorrect_note: what the gold trace says about each response after
        "Response (x) ", e.g. "is correct" / "says 75, off by 10" / "refuses to answer".
    wrong_answer: the answer the incorrect response gives, None for a non-answer (refusal, ...).
    error: the magnitude of its error (absolute numeric error, or edit distance), None for a non-answer.
    """

    key: str
    kind: str
    question: str
    answer: str
    solution: str
    correct: str
    incorrect: str
    correct_note: str
    incorrect_note: str
    wrong_answer: str | None
    error: int | None
    strength: int


FamilyFn = Callable[[random.Random], "Problem | None"]
FAMILIES: dict[str, FamilyFn] = {}


def _family(name: str) -> Callable[[FamilyFn], FamilyFn]:
    def decorator(fn: FamilyFn) -> FamilyFn:
        if name in FAMILIES:
            raise ValueError(f"synthetic family {name!r} is registered twice")
        FAMILIES[name] = fn
        return fn

    return decorator


# --------------------------------------------------------------------------- measures of wrongness


def numeric_strength(wrong: int, answer: int) -> int:
    """Strength of preferring `answer` over `wrong`: small (1), medium (2) or large (3) error."""
    err = abs(wrong - answer)
    if err == 0:
        raise ValueError(f"wrong answer {wrong} equals the answer")
    if err <= max(1.0, 0.05 * abs(answer)):
        return 1
    if err <= max(3.0, 0.3 * abs(answer)):
        return 2
    return 3


def edit_distance(x: Sequence[object], y: Sequence[object]) -> int:
    """Levenshtein distance between two strings, or two lists of items."""
    prev = list(range(len(y) + 1))
    for i, xi in enumerate(x, 1):
        cur = [i]
        for j, yj in enumerate(y, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (xi != yj)))
        prev = cur
    return prev[-1]


def sequence_strength(wrong: Sequence[object], answer: Sequence[object]) -> int:
    """Strength for string/list answers: one edit (1), up to half the length (2), more (3)."""
    d = edit_distance(wrong, answer)
    if d == 0:
        raise ValueError("wrong answer equals the answer")
    if d == 1:
        return 1
    return 2 if d <= math.ceil(len(answer) / 2) else 3


def states_answer(text: str, answer: str) -> bool:
    """Whether `text` states `answer` as a whole token (85 is not stated by 850, 'ele' not by 'elephant')."""
    return re.search(r"(?<![\w.\-])" + re.escape(answer) + r"(?![\w\-]|\.\w)", text) is not None


def split_of(key: str) -> str:
    """The split ("train" or "test") a problem belongs to, from a hash of its canonical key."""
    return "test" if percent_of(f"judge_rl.synthetic/{key}") < TEST_PERCENT else "train"


# --------------------------------------------------------------------------- shared pieces

NON_ANSWERS: tuple[tuple[str, str], ...] = (
    ("I'm sorry, but I can't help with that.", "refuses to answer"),
    ("I don't know.", "gives no answer"),
    ("Great question! Let me know if you need anything else.", "does not answer the question"),
    ("Cats are wonderful pets.", "is off-topic"),
)

WORDS: tuple[str, ...] = tuple(
    """
    apple banana cherry garden planet window pencil rocket silver orange purple yellow
    basket bottle button candle carpet castle circle cookie copper cotton dinner doctor
    dragon engine family farmer finger flower forest friend guitar hammer harbor helmet
    island jacket jungle kitten ladder lemon letter marble market meadow mirror monkey
    needle number office paper parrot pepper pillow pirate pocket potato puzzle rabbit
    ribbon river saddle school shadow signal singer spider spring stream summer sunset
    table teacher ticket tiger tomato tunnel turtle valley velvet violin wallet winter
    wizard wonder yogurt zipper anchor animal bakery barrel beacon beetle blanket bridge
    butter cactus camera canvas carrot cement cheese chimney cinema clover cobweb comet
    compass cradle crayon desert diamond dolphin donkey eagle elbow falcon feather fiddle
    fossil galaxy garlic giraffe glacier goblin gravel hamster harvest hazel hornet iceberg
    insect jigsaw kettle kingdom lantern lizard lobster magnet mango meteor muffin mustard
    napkin nickel noodle oyster paddle panda parcel peanut pebble penguin pickle pigeon
    pirate plaster plum pony powder pretzel pumpkin quartz quilt raisin raven rhythm
    saucer scarf sketch slipper spinach sponge squirrel stapler statue sugar tablet teapot
    thistle thunder timber toaster tractor trumpet tulip umbrella unicorn vessel walnut
    weasel whistle willow yacht zebra elephant blossom breeze canyon dune ember harp
    """.split()
)
WORDS = tuple(dict.fromkeys(WORDS))  # drop accidental repeats, keep order

_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _target(rng: random.Random) -> int:
    return rng.randint(1, 3)


def _plural(n: float | str, unit: str) -> str:
    return unit if str(n) == "1" else unit + "s"


def _numeric_wrong(rng: random.Random, answer: int, target: int) -> int:
    """A wrong number whose error falls in the bucket of `target` (see numeric_strength)."""
    a = abs(answer)
    t1 = max(1, math.floor(0.05 * a))
    t2 = max(3, math.floor(0.3 * a))
    if target == 1:
        err = rng.randint(1, t1)
    elif target == 2:
        err = rng.randint(t1 + 1, t2)
    else:
        err = rng.randint(t2 + 1, t2 + 1 + max(a // 2, 10))
    up, down = answer + err, answer - err
    if down < 0 or (len(str(up)) <= len(str(answer)) and rng.random() < 0.5):
        return up  # keep numbers (and so traces) short: go up only when it adds no digit
    return down


def _finish_numeric(
    rng: random.Random,
    *,
    key: str,
    kind: str,
    question: str,
    answer: int,
    templates: Sequence[str],
    wrong: int | None = None,
) -> Problem:
    """Build a numeric problem; `wrong` overrides the drawn wrong number (a natural mistake)."""
    solution = f"Answer: {answer}."
    target = _target(rng)
    correct = rng.choice(templates).format(x=answer, xs=_plural(answer, ""))
    if wrong is None and target == 3 and rng.random() < 0.25:
        text, note = rng.choice(NON_ANSWERS)
        return Problem(key, kind, question, str(answer), solution, correct, text, "is correct", note, None, None, 3)
    if wrong is None:
        wrong = _numeric_wrong(rng, answer, target)
    incorrect = rng.choice(templates).format(x=wrong, xs=_plural(wrong, ""))
    err = abs(wrong - answer)
    return Problem(key, kind, question, str(answer), solution, correct, incorrect,
                   "is correct", f"says {wrong}, off by {err}",
                   str(wrong), err, numeric_strength(wrong, answer))


def _string_wrong(rng: random.Random, answer: str, target: int, alphabet: str) -> str:
    """A corrupted copy of `answer`: one edit for target 1, 2..len/2 substitutions for target 2."""
    chars = list(answer)
    if target == 1:
        i = rng.randrange(len(chars))
        op = rng.choice(("sub", "del", "ins"))
        if op == "del":
            del chars[i]
        elif op == "ins":
            chars.insert(i, rng.choice(alphabet))
        else:
            chars[i] = rng.choice([c for c in alphabet if c != chars[i]])
        return "".join(chars)
    m = rng.randint(2, max(2, math.ceil(len(chars) / 2)))
    for i in rng.sample(range(len(chars)), min(m, len(chars))):
        chars[i] = rng.choice([c for c in alphabet if c != chars[i]])
    return "".join(chars)


def _finish_sequence(
    rng: random.Random,
    *,
    key: str,
    kind: str,
    question: str,
    answer: str,
    solution: str,
    templates: Sequence[str],
    wrong: str,
    show: Callable[[str], str],
    items: Callable[[str], Sequence[object]],
    unit: str,
    non_answer: bool = False,
    quote_in_notes: bool = True,
) -> Problem | None:
    """Build a string/list problem; strength from the edit distance between the item sequences.

    quote_in_notes: whether the trace quotes the wrong answer (False for long ones, to keep traces short).
    """
    correct = rng.choice(templates).format(x=show(answer))
    correct_note = "is correct"
    if non_answer:
        text, note = rng.choice(NON_ANSWERS)
        return Problem(key, kind, question, answer, solution, correct, text, correct_note, note, None, None, 3)
    if not wrong or wrong == answer:
        return None
    d = edit_distance(items(wrong), items(answer))
    incorrect = rng.choice(templates).format(x=show(wrong))
    off = f"off by {d} {_plural(d, unit)}"
    note = f"gives {show(wrong)}, {off}" if quote_in_notes else f"is {off}"
    return Problem(key, kind, question, answer, solution, correct, incorrect, correct_note, note,
                   wrong, d, sequence_strength(items(wrong), items(answer)))


def _quoted(s: str) -> str:
    return f"'{s}'"


# --------------------------------------------------------------------------- families


@_family("arithmetic")
def arithmetic(rng: random.Random) -> Problem:
    """Addition, subtraction and multiplication of small integers."""
    op = rng.choice(("add", "sub", "mul"))
    if op == "add":
        a, b = rng.randint(10, 499), rng.randint(10, 499)
        c, sym, word, key = a + b, "+", "plus", f"add:{min(a, b)}:{max(a, b)}"
    elif op == "sub":
        a = rng.randint(20, 999)
        b = rng.randint(10, a - 10)
        c, sym, word, key = a - b, "-", "minus", f"sub:{a}:{b}"
    else:
        a, b = rng.randint(3, 60), rng.randint(3, 15)
        c, sym, word, key = a * b, "×", "times", f"mul:{min(a, b)}:{max(a, b)}"
    question = rng.choice((
        f"What is {a} {sym} {b}?",
        f"Compute {a} {sym} {b}.",
        f"What is {a} {word} {b}?",
    ))
    templates = (f"{a} {sym} {b} = {{x}}.", "The answer is {x}.", f"{a} {word} {b} equals {{x}}.", "It is {x}.")
    wrong = None
    if op == "mul" and rng.random() < 0.15:
        wrong = a + b  # a classic confusion of operations
    return _finish_numeric(rng, key=key, kind=op, question=question, answer=c, templates=templates, wrong=wrong)


@_family("counting")
def counting(rng: random.Random) -> Problem:
    """Count a letter in a word, the words in a phrase, or a digit in a number."""
    kind = rng.choice(("letter", "words", "digit"))
    if kind == "letter":
        word = rng.choice(WORDS)
        letter = rng.choice(sorted(set(word)))
        c = word.count(letter)
        key = f"letter:{word}:{letter}"
        question = rng.choice((
            f"How many times does the letter '{letter}' appear in '{word}'?",
            f"Count the letter '{letter}' in the word '{word}'.",
        ))
        templates = (f"The letter '{letter}' appears {{x}} time{{xs}} in '{word}'.", "The answer is {x}.",
                     "It appears {x} time{xs}.")
    elif kind == "words":
        phrase = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 9)))
        c = len(phrase.split())
        key = f"words:{phrase}"
        question = rng.choice((
            f"How many words are in the phrase '{phrase}'?",
            f"Count the words in '{phrase}'.",
        ))
        templates = ("The phrase has {x} word{xs}.", "There are {x} word{xs}.", "The answer is {x}.")
    else:
        digit = rng.randint(0, 9)
        length = rng.randint(4, 7)
        digits = [str(rng.randint(0, 9)) for _ in range(length)]
        for i in rng.sample(range(1, length), rng.randint(1, 3)):
            digits[i] = str(digit)
        if digits[0] == "0":
            digits[0] = str(rng.randint(1, 9))
        number = "".join(digits)
        c = number.count(str(digit))
        key = f"digit:{number}:{digit}"
        question = f"How many times does the digit {digit} appear in {number}?"
        templates = (f"The digit {digit} appears {{x}} time{{xs}}.", "The answer is {x}.", "It appears {x} time{xs}.")
    return _finish_numeric(rng, key=key, kind=kind, question=question, answer=c, templates=templates)


# (big unit, small unit, factor): small = big * factor. Answers stay below 1000 so that traces stay
# short (the judge's tokenizer spends a token per digit): "down" questions (big -> small) exist only
# for factors up to 100, "up" questions (small -> big) have answers 1..99.
_CONVERSIONS: tuple[tuple[str, str, int], ...] = (
    ("kilometer", "meter", 1000),
    ("kilogram", "gram", 1000),
    ("liter", "milliliter", 1000),
    ("meter", "centimeter", 100),
    ("centimeter", "millimeter", 10),
    ("hour", "minute", 60),
    ("minute", "second", 60),
    ("day", "hour", 24),
    ("week", "day", 7),
    ("year", "month", 12),
    ("decade", "year", 10),
    ("century", "year", 100),
    ("dollar", "cent", 100),
    ("foot", "inch", 12),
    ("yard", "foot", 3),
    ("pound", "ounce", 16),
)
MAX_NUMERIC_ANSWER = 999


@_family("unit_conversion")
def unit_conversion(rng: random.Random) -> Problem | None:
    """Convert between metric, imperial, time and money units, in either direction."""
    big, small, factor = rng.choice(_CONVERSIONS)
    down = factor <= 100 and rng.random() < 0.6
    if down:
        value: float | int = rng.randint(1, MAX_NUMERIC_ANSWER // factor)
        if factor % 2 == 0 and rng.random() < 0.3:
            value += 0.5
        answer = int(value * factor)
        if answer > MAX_NUMERIC_ANSWER:
            return None
        src, dst = big, small
    else:
        answer = rng.randint(1, 99)
        value = answer * factor
        src, dst = small, big
    v = f"{value:g}"
    key = f"conv:{src}>{dst}:{v}"
    question = rng.choice((
        f"How many {dst}s are in {v} {_plural(v, src)}?",
        f"Convert {v} {_plural(v, src)} to {dst}s.",
    ))
    templates = (f"{v} {_plural(v, src)} is {{x}} {dst}{{xs}}.", f"That is {{x}} {dst}{{xs}}.",
                 f"The answer is {{x}} {dst}{{xs}}.")
    wrong = None
    if rng.random() < 0.2:  # a wrong conversion factor, the typical real mistake
        bad = rng.choice([f for f in (10, 12, 24, 60, 100, 1000) if f != factor])
        guess = value * bad if down else value / bad
        if float(guess).is_integer() and 0 <= guess <= MAX_NUMERIC_ANSWER and int(guess) != answer:
            wrong = int(guess)
    return _finish_numeric(rng, key=key, kind=f"{src}>{dst}", question=question, answer=answer,
                           templates=templates, wrong=wrong)


@_family("string_manipulation")
def string_manipulation(rng: random.Random) -> Problem | None:
    """Reverse, uppercase, take the first/last letters of, sort the letters of, or remove the vowels
    of a word; or write the initials of a phrase."""
    kind = rng.choice(("reverse", "upper", "first", "last", "sort", "vowels", "initials", "initials"))
    word = rng.choice(WORDS)
    target = _target(rng)
    alphabet = _LETTERS
    if kind == "reverse":
        answer, key = word[::-1], f"reverse:{word}"
        question = rng.choice((f"Reverse the word '{word}'.", f"What is '{word}' spelled backwards?"))
        natural = word  # forgot to reverse
        templates = (f"'{word}' reversed is {{x}}.", "The reversed word is {x}.", "Backwards, it is {x}.")
    elif kind == "upper":
        if len(word) > 6:  # capitals cost about a token per two letters: keep traces short
            return None
        answer, key = word.upper(), f"upper:{word}"
        question = rng.choice((f"Write '{word}' in capital letters.", f"Convert '{word}' to uppercase."))
        natural = word  # left unchanged
        alphabet = _LETTERS.upper()
        templates = (f"'{word}' in uppercase is {{x}}.", "Here it is: {x}.", "The answer is {x}.")
    elif kind in ("first", "last"):
        k = rng.randint(3, 4)
        if len(word) < k + 2:
            return None
        answer = word[:k] if kind == "first" else word[-k:]
        natural = word[-k:] if kind == "first" else word[:k]  # took the wrong end
        key = f"{kind}:{k}:{word}"
        question = f"What are the {kind} {k} letters of '{word}'?"
        templates = (f"The {kind} {k} letters are {{x}}.", "They are {x}.", "The answer is {x}.")
    elif kind == "vowels":
        answer, key = "".join(c for c in word if c not in "aeiou"), f"vowels:{word}"
        if len(answer) < 3:
            return None
        question = f"Remove every vowel from '{word}'."
        natural = word  # removed nothing
        templates = ("Without vowels it is {x}.", "The answer is {x}.", "Here it is: {x}.")
    elif kind == "initials":
        phrase = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 5)))
        answer, key = "".join(w[0] for w in phrase.split()), f"initials:{phrase}"
        question = f"Write the first letter of each word in '{phrase}', with no spaces."
        natural = "".join(w[-1] for w in phrase.split())  # took last letters instead
        templates = ("The initials are {x}.", "The answer is {x}.", "Here it is: {x}.")
    else:
        answer, key = "".join(sorted(word)), f"sort:{word}"
        if answer == word or len(word) > 6:  # sorted letters tokenize badly: keep traces short
            return None
        question = f"Sort the letters of '{word}' in alphabetical order."
        natural = word  # left unsorted
        templates = ("Sorted, the letters are {x}.", "The answer is {x}.", "In order: {x}.")
    non_answer = target == 3 and rng.random() < 0.25
    if target == 3:
        wrong = natural if rng.random() < 0.6 else "".join(rng.sample(alphabet, len(answer)))
    else:
        wrong = _string_wrong(rng, answer, target, alphabet)
    if kind == "upper" and target < 3 and rng.random() < 0.5:
        # one letter left lowercase, or stopped halfway
        cut = len(word) - 1 if target == 1 else math.ceil(len(word) / 2)
        wrong = word[:cut].upper() + word[cut:]
    return _finish_sequence(rng, key=key, kind=kind, question=question, answer=answer,
                            solution=f"Answer: '{answer}'.", templates=templates, wrong=wrong, show=_quoted,
                            items=lambda s: s, unit="letter", non_answer=non_answer)


@_family("constraint_following")
def constraint_following(rng: random.Random) -> Problem | None:
    """Follow a checkable format instruction: repeat a word, count a range, spell with hyphens."""
    kind = rng.choice(("repeat", "range", "spell"))
    target = _target(rng)
    non_answer = target == 3 and rng.random() < 0.25
    if kind == "repeat":
        word, k = rng.choice(WORDS), rng.randint(3, 7)
        sep_name, sep = rng.choice((("spaces", " "), ("commas", ", ")))
        items = [word] * k
        key = f"repeat:{word}:{k}:{sep_name}"
        question = f"Write the word '{word}' {k} times, separated by {sep_name}."
        solution = f"It needs '{word}' {k} times."
        other = rng.choice([w for w in WORDS if w != word])
        wrong_whole = [other] * k
        unit = "word"

        def corrupt(item: str) -> str:
            return _string_wrong(rng, item, 1, _LETTERS)
    elif kind == "range":
        lo = rng.randint(1, 200)
        hi = lo + rng.randint(2, 7)
        sep_name, sep = "commas", ", "
        items = [str(i) for i in range(lo, hi + 1)]
        key = f"range:{lo}:{hi}"
        question = f"List the whole numbers from {lo} to {hi}, separated by commas."
        solution = f"It needs {hi - lo + 1} numbers."
        start = lo + rng.choice((-1, 1)) * rng.randint(len(items) + 1, 50)
        wrong_whole = [str(i) for i in range(max(start, 0), max(start, 0) + len(items))]
        unit = "number"

        def corrupt(item: str) -> str:
            return str(int(item) + rng.choice((-2, -1, 1, 2)))
    else:
        word = rng.choice(WORDS)
        sep_name, sep = "hyphens", "-"
        items = list(word)
        key = f"spell:{word}"
        question = f"Spell '{word}' with hyphens between the letters."
        solution = f"It needs {len(word)} letters."
        wrong_whole = list(rng.choice([w for w in WORDS if w != word]))
        unit = "letter"

        def corrupt(item: str) -> str:
            return rng.choice([c for c in _LETTERS if c != item])
    answer = sep.join(items)
    if target == 3:
        wrong_items = wrong_whole
    else:
        wrong_items = list(items)
        m = 1 if target == 1 else rng.randint(2, max(2, math.ceil(len(items) / 2)))
        for i in sorted(rng.sample(range(len(items)), m), reverse=True):
            if rng.random() < 0.5:
                del wrong_items[i]  # a missing item: the most common slip
            else:
                wrong_items[i] = corrupt(wrong_items[i])
    wrong = sep.join(wrong_items)
    templates = ("{x}", "Here it is: {x}", "Sure: {x}")
    return _finish_sequence(rng, key=key, kind=kind, question=question, answer=answer, solution=solution,
                            templates=templates, wrong=wrong, show=lambda s: s,
                            items=lambda s: s.split(sep) if s else [], unit=unit, non_answer=non_answer,
                            quote_in_notes=False)


# --------------------------------------------------------------------------- pairs


def gold_trace(problem: Problem, chosen_position: str, reference: bool = False) -> str:
    """The assistant turn a judge should write when the correct response is shown at `chosen_position`.

    reference=True (reference-guided judging, the reference answer is in the prompt): the trace copies
    the reference, then what each response says as "<answer> is in Response (x).", then "The reference
    <answer> is in Response (" - whose next token a language model's in-context recall (an induction head:
    the token that followed this answer before) supplies - and the verdict copies that letter. Every step
    is a copy, never a computation or a comparison the judge must learn from scratch."""
    other = "b" if chosen_position == "a" else "a"
    if reference:
        says = {chosen_position: f"{problem.answer} is in Response ({chosen_position}).",
                other: f"{problem.wrong_answer} is in Response ({other})." if problem.wrong_answer is not None
                else f"Response ({other}) {problem.incorrect_note}."}
        thinking = (f"Reference: {problem.answer}. {says['a']} {says['b']} "
                    f"The reference {problem.answer} is in Response ({chosen_position}).")
    else:
        notes = {chosen_position: problem.correct_note, other: problem.incorrect_note}
        thinking = f"{problem.solution} Response (a) {notes['a']}. Response (b) {notes['b']}."
    return f"<think>\n{thinking}\n</think>\n" + verdict_line(chosen_position, problem.strength)


def _usable(problem: Problem | None, split: str, seen: set[str]) -> bool:
    return (
        problem is not None
        and problem.key not in seen
        and split_of(problem.key) == split
        and states_answer(problem.correct, problem.answer)
        and not states_answer(problem.incorrect, problem.answer)
    )


def generate_pairs(
    n: int, seed: int, split: str = "train", families: Sequence[str] | None = None, reference: bool = False
) -> list[PreferencePair]:
    """`n` verifiable pairs from `split`, families taken round-robin; the same arguments give the same list.

    reference: put the computed answer in `meta["reference"]`, which the pairwise judge prompts show as a
    reference answer (reference-guided judging: the judge compares, it does not compute).

    Each family draws from its own random stream (seeded by `seed` and the family name), so the
    first k pairs of a call are the first k of any longer call with the same arguments. No problem
    appears twice in one call. Pair ids are ``synthetic-<family>-<split>-<k>`` (k counts per family).
    """
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    names = list(FAMILIES) if families is None else list(families)
    if not names:
        raise ValueError("families must name at least one family")
    for name in names:
        if name not in FAMILIES:
            raise ValueError(f"unknown synthetic family {name!r}; known: {', '.join(FAMILIES)}")
    rngs = {name: random.Random(f"judge_rl.synthetic:{seed}:{name}") for name in names}
    counts = {name: 0 for name in names}
    seen: set[str] = set()
    pairs: list[PreferencePair] = []
    for i in range(n):
        name = names[i % len(names)]
        for _ in range(MAX_DRAWS):
            problem = FAMILIES[name](rngs[name])
            if _usable(problem, split, seen):
                break
        else:
            raise RuntimeError(f"synthetic family {name!r} found no new {split} problem in {MAX_DRAWS} draws")
        assert problem is not None
        seen.add(problem.key)
        k = counts[name]
        counts[name] += 1
        pairs.append(
            PreferencePair(
                pair_id=f"synthetic-{name}-{split}-{k}",
                source=f"synthetic/{name}",
                question=problem.question,
                chosen=problem.correct,
                rejected=problem.incorrect,
                strength=problem.strength,
                traces={pos: gold_trace(problem, pos, reference) for pos in ("a", "b")},
                meta={
                    "family": name,
                    "answer": problem.answer,
                    "kind": problem.kind,
                    "key": problem.key,
                    "split": split,
                    "seed": seed,
                    "wrong_answer": problem.wrong_answer,
                    "error": problem.error,
                    **({"reference": problem.answer} if reference else {}),
                },
            )
        )
    return pairs
