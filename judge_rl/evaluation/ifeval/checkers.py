"""The 25 IFEval instruction checkers: `CHECKERS[instruction_id](response, **kwargs) -> bool`.

Each checker takes the arguments the published data gives it (the official argument names, such as
``num_words`` and ``relation``) and implements the published check (google-research
``instruction_following_eval/instructions.py``), quirks included, since the published scores depend
on them: keywords are matched as case-insensitive regular expressions and, for ``keywords:frequency``
and ``keywords:existence``, anywhere in a word (``"war"`` counts in ``"software"``), forbidden words
only as whole words; ``detectable_format:number_bullet_lists`` counts ``*`` and ``-`` lines (a ``---``
rule counts too) and wants the exact number; ``startend:end_checker`` ignores surrounding double quotes;
a language that cannot be detected (a text with no letters) counts as followed. Where the official code
would pick a random value for a missing or out-of-range argument, a checker here raises a one-line
ValueError instead. Arguments whose value is None are ignored (the Hugging Face copy of the data lists
every argument of every instruction, unused ones as null).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Callable, Mapping

from judge_rl.evaluation.ifeval.language import detect_language
from judge_rl.evaluation.ifeval.text import count_capital_words, count_sentences, count_words

RELATIONS = ("less than", "at least")


def _compare(count: int, relation: str, threshold: int) -> bool:
    """'less than': count < threshold; 'at least': count >= threshold."""
    return count < threshold if relation == "less than" else count >= threshold


# --------------------------------------------------------------------------------------------------
# Argument kinds: each validates one argument and returns the value the check uses.
# --------------------------------------------------------------------------------------------------


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"must be a non-negative integer, got {value!r}")
    return value


def _positive(value: Any) -> int:
    if _count(value) < 1:
        raise ValueError(f"must be a positive integer, got {value!r}")
    return value


def _text(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"must be a non-empty string, got {value!r}")
    return value


def _relation(value: Any) -> str:
    if value not in RELATIONS:
        raise ValueError(f"must be one of {', '.join(map(repr, RELATIONS))}, got {value!r}")
    return value


def _pattern(value: Any) -> str:
    """A string used as a regular expression (the official checkers do not escape keywords)."""
    value = _text(value)
    try:
        re.compile(value)
    except re.error as e:
        raise ValueError(f"is not a valid regular expression ({e}): {value!r}") from None
    return value


def _patterns(value: Any) -> list[str]:
    if not isinstance(value, (list, tuple)) or not value:
        raise ValueError(f"must be a non-empty list of strings, got {value!r}")
    return [_pattern(v) for v in value]


def _letter(value: Any) -> str:
    if not isinstance(value, str) or len(value) != 1:
        raise ValueError(f"must be a single character, got {value!r}")
    return value


@dataclass(frozen=True)
class Checker:
    """One instruction: `fn(response, **arguments)`; `args` maps each required argument to its kind."""

    instruction_id: str
    fn: Callable[..., bool]
    args: Mapping[str, Callable[[Any], Any]]
    constraint: Callable[[dict[str, Any]], str | None] | None = None  # across arguments: an error or None

    def arguments(self, kwargs: Mapping[str, Any] | None, where: str = "") -> dict[str, Any]:
        """The validated arguments (None-valued ones dropped); a one-line ValueError otherwise."""
        prefix = f"{where}instruction {self.instruction_id!r}"
        if kwargs is None:
            kwargs = {}
        if not isinstance(kwargs, Mapping):
            raise ValueError(f"{prefix}: arguments must be an object, got {kwargs!r}")
        given = {k: v for k, v in kwargs.items() if v is not None}
        unknown = sorted(set(given) - set(self.args))
        if unknown:
            raise ValueError(
                f"{prefix}: unknown argument(s) {', '.join(unknown)}; takes {', '.join(self.args) or 'none'}"
            )
        missing = [k for k in self.args if k not in given]
        if missing:
            raise ValueError(f"{prefix}: missing argument(s) {', '.join(missing)}")
        clean = {}
        for name, kind in self.args.items():
            try:
                clean[name] = kind(given[name])
            except ValueError as e:
                raise ValueError(f"{prefix}: argument {name} {e}") from None
        problem = self.constraint(clean) if self.constraint else None
        if problem:
            raise ValueError(f"{prefix}: {problem}")
        return clean

    def __call__(self, response: str, **kwargs: Any) -> bool:
        if not isinstance(response, str):
            raise ValueError(f"instruction {self.instruction_id!r}: the response must be a string")
        return bool(self.fn(response, **self.arguments(kwargs)))


_REGISTRY: dict[str, Checker] = {}


def _checker(instruction_id: str, constraint=None, **args: Callable[[Any], Any]):
    def decorator(fn):
        if instruction_id in _REGISTRY:
            raise ValueError(f"IFEval checker {instruction_id!r} is registered twice")
        _REGISTRY[instruction_id] = Checker(instruction_id, fn, MappingProxyType(dict(args)), constraint)
        return fn

    return decorator


# --------------------------------------------------------------------------------------------------
# keywords
# --------------------------------------------------------------------------------------------------


@_checker("keywords:existence", keywords=_patterns)
def keywords_existence(response: str, *, keywords: list[str]) -> bool:
    """Every keyword occurs (case-insensitive regular expression, anywhere, even inside a word)."""
    return all(re.search(k, response, flags=re.IGNORECASE) for k in keywords)


@_checker("keywords:frequency", keyword=_pattern, frequency=_count, relation=_relation)
def keywords_frequency(response: str, *, keyword: str, frequency: int, relation: str) -> bool:
    """Occurrences of the keyword (stripped; case-insensitive regular expression, non-overlapping,
    inside words too) compared with `frequency`."""
    count = len(re.findall(keyword.strip(), response, flags=re.IGNORECASE))
    return _compare(count, relation, frequency)


@_checker("keywords:forbidden_words", forbidden_words=_patterns)
def keywords_forbidden_words(response: str, *, forbidden_words: list[str]) -> bool:
    """No forbidden word occurs as a whole word (``\\b`` on both sides, case-insensitive)."""
    return not any(re.search(rf"\b{w}\b", response, flags=re.IGNORECASE) for w in forbidden_words)


@_checker("keywords:letter_frequency", letter=_letter, let_frequency=_count, let_relation=_relation)
def keywords_letter_frequency(response: str, *, letter: str, let_frequency: int, let_relation: str) -> bool:
    """Occurrences of the character (case-insensitive) compared with `let_frequency`."""
    count = Counter(response.lower())[letter.strip().lower()]
    return _compare(count, let_relation, let_frequency)


# --------------------------------------------------------------------------------------------------
# language and case
# --------------------------------------------------------------------------------------------------


@_checker("language:response_language", language=_text)
def language_response_language(response: str, *, language: str) -> bool:
    """langdetect's language for the whole response is `language` (undetectable counts as followed)."""
    detected = detect_language(response)
    return detected is None or detected == language


@_checker("change_case:english_capital")
def change_case_english_capital(response: str) -> bool:
    """All cased characters are capitals (``str.isupper``) and the language is English."""
    if not response.isupper():
        return False
    detected = detect_language(response)
    return detected is None or detected == "en"


@_checker("change_case:english_lowercase")
def change_case_english_lowercase(response: str) -> bool:
    """All cased characters are lower case (``str.islower``) and the language is English."""
    if not response.islower():
        return False
    detected = detect_language(response)
    return detected is None or detected == "en"


@_checker("change_case:capital_word_frequency", capital_frequency=_count, capital_relation=_relation)
def change_case_capital_word_frequency(response: str, *, capital_frequency: int, capital_relation: str) -> bool:
    """Word tokens in all capitals (nltk.word_tokenize tokens; see text.count_capital_words) compared
    with `capital_frequency`."""
    return _compare(count_capital_words(response), capital_relation, capital_frequency)


# --------------------------------------------------------------------------------------------------
# length constraints
# --------------------------------------------------------------------------------------------------


@_checker("length_constraints:number_words", num_words=_count, relation=_relation)
def length_number_words(response: str, *, num_words: int, relation: str) -> bool:
    """Words (runs of ``\\w``) compared with `num_words`."""
    return _compare(count_words(response), relation, num_words)


@_checker("length_constraints:number_sentences", num_sentences=_count, relation=_relation)
def length_number_sentences(response: str, *, num_sentences: int, relation: str) -> bool:
    """Sentences (Punkt-style, see text.count_sentences) compared with `num_sentences`."""
    return _compare(count_sentences(response), relation, num_sentences)


@_checker("length_constraints:number_paragraphs", num_paragraphs=_count)
def length_number_paragraphs(response: str, *, num_paragraphs: int) -> bool:
    """Exactly `num_paragraphs` parts between ``***`` dividers; an empty part is allowed only first or
    last (and is not counted)."""
    parts = re.split(r"\s?\*\*\*\s?", response)
    count = len(parts)
    for i, part in enumerate(parts):
        if not part.strip():
            if i not in (0, len(parts) - 1):
                return False
            count -= 1
    return count == num_paragraphs


def _nth_within(args: dict[str, Any]) -> str | None:
    if args["nth_paragraph"] > args["num_paragraphs"]:
        return f"nth_paragraph {args['nth_paragraph']} exceeds num_paragraphs {args['num_paragraphs']}"
    return None


@_checker(
    "length_constraints:nth_paragraph_first_word",
    constraint=_nth_within,
    num_paragraphs=_positive,
    nth_paragraph=_positive,
    first_word=_text,
)
def length_nth_paragraph_first_word(response: str, *, num_paragraphs: int, nth_paragraph: int, first_word: str) -> bool:
    """Exactly `num_paragraphs` non-empty paragraphs separated by ``\\n\\n``, and the n-th part of that
    split (empty parts included in the numbering) starts with `first_word`: its first
    whitespace-separated word, leading quotes removed, up to the first of ``. , ? ! ' "``, compared
    case-insensitively."""
    parts = response.split("\n\n")
    count = sum(1 for p in parts if p.strip())
    if nth_paragraph > count:
        return False
    paragraph = parts[nth_paragraph - 1].strip()
    if not paragraph:
        return False
    word = paragraph.split()[0].strip().lstrip("'").lstrip('"')
    word = "".join(c.lower() for c in re.split(r"[.,?!'\"]", word, maxsplit=1)[0])
    return count == num_paragraphs and word == first_word.lower()


# --------------------------------------------------------------------------------------------------
# detectable content
# --------------------------------------------------------------------------------------------------


@_checker("detectable_content:number_placeholders", num_placeholders=_count)
def content_number_placeholders(response: str, *, num_placeholders: int) -> bool:
    """At least `num_placeholders` square-bracket placeholders ``[...]`` (shortest match, one line or
    not)."""
    return len(re.findall(r"\[.*?\]", response)) >= num_placeholders


@_checker("detectable_content:postscript", postscript_marker=_pattern)
def content_postscript(response: str, *, postscript_marker: str) -> bool:
    """The marker occurs anywhere, case-insensitively: ``P.S.`` as "p.s." with an optional space after
    the first period; ``P.P.S`` as "p.p.s" with optional spaces after the periods; any other marker as
    a regular expression."""
    marker = postscript_marker.strip()
    if marker == "P.P.S":
        pattern = r"\s*p\.\s?p\.\s?s.*$"
    elif marker == "P.S.":
        pattern = r"\s*p\.\s?s\..*$"
    else:
        pattern = r"\s*" + marker.lower() + r".*$"
    return bool(re.findall(pattern, response.lower(), flags=re.MULTILINE))


# --------------------------------------------------------------------------------------------------
# detectable format
# --------------------------------------------------------------------------------------------------

_CONSTRAINED_OPTIONS = ("My answer is yes.", "My answer is no.", "My answer is maybe.")


@_checker("detectable_format:constrained_response")
def format_constrained_response(response: str) -> bool:
    """One of "My answer is yes.", "My answer is no.", "My answer is maybe." occurs (case-sensitive)."""
    return any(option in response.strip() for option in _CONSTRAINED_OPTIONS)


@_checker("detectable_format:json_format")
def format_json(response: str) -> bool:
    """The response, stripped of a surrounding markdown fence (```json, ```Json, ```JSON or ```), parses
    as JSON (Python's json, which also takes NaN and Infinity)."""
    value = response.strip()
    for fence in ("```json", "```Json", "```JSON", "```"):
        value = value.removeprefix(fence)
    value = value.removesuffix("```").strip()
    try:
        json.loads(value)
    except ValueError:
        return False
    return True


@_checker("detectable_format:multiple_sections", section_spliter=_pattern, num_sections=_count)
def format_multiple_sections(response: str, *, section_spliter: str, num_sections: int) -> bool:
    """At least `num_sections` section headers: the splitter word (case-sensitive, a regular expression)
    followed by a number, e.g. "SECTION 1"."""
    parts = re.split(r"\s?" + section_spliter.strip() + r"\s?\d+\s?", response)
    return len(parts) - 1 >= num_sections


@_checker("detectable_format:number_bullet_lists", num_bullets=_count)
def format_number_bullet_lists(response: str, *, num_bullets: int) -> bool:
    """Exactly `num_bullets` lines starting (after whitespace) with ``*`` not followed by ``*``, or with
    ``-``."""
    stars = re.findall(r"^\s*\*[^\*].*$", response, flags=re.MULTILINE)
    dashes = re.findall(r"^\s*-.*$", response, flags=re.MULTILINE)
    return len(stars) + len(dashes) == num_bullets


@_checker("detectable_format:number_highlighted_sections", num_highlights=_count)
def format_number_highlighted_sections(response: str, *, num_highlights: int) -> bool:
    """At least `num_highlights` highlights: non-empty ``*text*`` spans plus non-empty ``**text**`` spans
    (one line each)."""
    single = [h for h in re.findall(r"\*[^\n\*]*\*", response) if h.strip("*").strip()]
    double = [h for h in re.findall(r"\*\*[^\n\*]*\*\*", response) if h[2:-2].strip()]
    return len(single) + len(double) >= num_highlights


@_checker("detectable_format:title")
def format_title(response: str) -> bool:
    """A title in double angular brackets, ``<<title>>``, on one line and not blank."""
    return any(t.lstrip("<").rstrip(">").strip() for t in re.findall(r"<<[^\n]+>>", response))


# --------------------------------------------------------------------------------------------------
# combination, start/end, punctuation
# --------------------------------------------------------------------------------------------------


@_checker("combination:two_responses")
def combination_two_responses(response: str) -> bool:
    """Exactly two different non-empty responses separated by ``******`` (an empty part only first or
    last)."""
    parts = response.split("******")
    answers = []
    for i, part in enumerate(parts):
        if part.strip():
            answers.append(part)
        elif i not in (0, len(parts) - 1):
            return False
    return len(answers) == 2 and answers[0].strip() != answers[1].strip()


@_checker("combination:repeat_prompt", prompt_to_repeat=_text)
def combination_repeat_prompt(response: str, *, prompt_to_repeat: str) -> bool:
    """The response starts with the request, ignoring case and surrounding whitespace."""
    return response.strip().lower().startswith(prompt_to_repeat.strip().lower())


@_checker("startend:end_checker", end_phrase=_text)
def startend_end_checker(response: str, *, end_phrase: str) -> bool:
    """The response, stripped of whitespace and then of double quotes, ends with the phrase (ignoring
    case)."""
    return response.strip().strip('"').lower().endswith(end_phrase.strip().lower())


@_checker("startend:quotation")
def startend_quotation(response: str) -> bool:
    """The stripped response is wrapped in double quotation marks (at least two characters)."""
    value = response.strip()
    return len(value) > 1 and value[0] == '"' and value[-1] == '"'


@_checker("punctuation:no_comma")
def punctuation_no_comma(response: str) -> bool:
    """No ASCII comma."""
    return "," not in response


CHECKERS: Mapping[str, Checker] = MappingProxyType(_REGISTRY)
INSTRUCTION_IDS: tuple[str, ...] = tuple(sorted(_REGISTRY))


def get_checker(instruction_id: Any, where: str = "") -> Checker:
    try:
        return CHECKERS[instruction_id]
    except (KeyError, TypeError):
        raise ValueError(
            f"{where}unknown instruction id {instruction_id!r}; known: {', '.join(INSTRUCTION_IDS)}"
        ) from None
