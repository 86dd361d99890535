"""IFEval checkers, strict/loose evaluation and scoring (judge_rl.evaluation.ifeval).

Every instruction id has hand-made responses that follow it and that do not, with the boundary of each
count relation ("less than": count < N; "at least": count >= N). The semantics are google-research's
instruction_following_eval; the expected values below were reasoned from it by hand (and the module was
cross-checked against that code, see the package docstring). Only the last tests need the real data.
"""

from __future__ import annotations

import json

import pytest

from judge_rl.evaluation.ifeval import (
    CHECKERS,
    INSTRUCTION_IDS,
    LOOSE_VARIANTS,
    aggregate,
    evaluate_prompt,
    get_checker,
    load_ifeval,
    loose_variants,
    make_prompt,
    score,
)
from judge_rl.evaluation.ifeval.language import detect_language
from judge_rl.evaluation.ifeval.text import (
    count_capital_words,
    count_sentences,
    count_words,
    split_sentences,
    word_tokens,
)

ALL_IDS = {
    "change_case:capital_word_frequency",
    "change_case:english_capital",
    "change_case:english_lowercase",
    "combination:repeat_prompt",
    "combination:two_responses",
    "detectable_content:number_placeholders",
    "detectable_content:postscript",
    "detectable_format:constrained_response",
    "detectable_format:json_format",
    "detectable_format:multiple_sections",
    "detectable_format:number_bullet_lists",
    "detectable_format:number_highlighted_sections",
    "detectable_format:title",
    "keywords:existence",
    "keywords:forbidden_words",
    "keywords:frequency",
    "keywords:letter_frequency",
    "language:response_language",
    "length_constraints:nth_paragraph_first_word",
    "length_constraints:number_paragraphs",
    "length_constraints:number_sentences",
    "length_constraints:number_words",
    "punctuation:no_comma",
    "startend:end_checker",
    "startend:quotation",
}

AT_LEAST, LESS_THAN = "at least", "less than"
EN = "This is an English sentence about the weather in the city today."
DE = "Das ist ein deutscher Satz über das Wetter in der Stadt heute."
HI = "यह हिंदी में लिखा गया एक वाक्य है और मौसम के बारे में है।"

# (instruction id, kwargs, response, followed?)
CASES = [
    # punctuation
    ("punctuation:no_comma", {}, "No commas here. None at all.", True),
    ("punctuation:no_comma", {}, "One, two.", False),
    # keywords
    ("keywords:existence", {"keywords": ["cat", "dog"]}, "The Cat chased the DOG.", True),
    ("keywords:existence", {"keywords": ["cat", "dog"]}, "concatenate dogma", True),  # anywhere, even in a word
    ("keywords:existence", {"keywords": ["cat", "dog"]}, "Only a cat here.", False),
    ("keywords:frequency", {"keyword": "war", "frequency": 2, "relation": AT_LEAST}, "War and war.", True),
    ("keywords:frequency", {"keyword": "war", "frequency": 2, "relation": AT_LEAST}, "One war only.", False),
    ("keywords:frequency", {"keyword": "war", "frequency": 2, "relation": AT_LEAST}, "software warning", True),
    ("keywords:frequency", {"keyword": "war", "frequency": 2, "relation": LESS_THAN}, "War and war.", False),
    ("keywords:frequency", {"keyword": "war", "frequency": 2, "relation": LESS_THAN}, "One war only.", True),
    ("keywords:forbidden_words", {"forbidden_words": ["cat", "dog"]}, "I like birds.", True),
    ("keywords:forbidden_words", {"forbidden_words": ["cat", "dog"]}, "The CAT sat.", False),
    ("keywords:forbidden_words", {"forbidden_words": ["cat", "dog"]}, "concatenate dogma", True),  # whole words only
    ("keywords:letter_frequency", {"letter": "q", "let_frequency": 3, "let_relation": AT_LEAST}, "Qq q", True),
    ("keywords:letter_frequency", {"letter": "q", "let_frequency": 3, "let_relation": AT_LEAST}, "qq", False),
    ("keywords:letter_frequency", {"letter": "q", "let_frequency": 3, "let_relation": LESS_THAN}, "qq", True),
    ("keywords:letter_frequency", {"letter": "Q", "let_frequency": 3, "let_relation": LESS_THAN}, "qQq", False),
    ("keywords:letter_frequency", {"letter": "#", "let_frequency": 2, "let_relation": AT_LEAST}, "# one # two", True),
    ("keywords:letter_frequency", {"letter": "#", "let_frequency": 2, "let_relation": AT_LEAST}, "# one", False),
    # language and case
    ("language:response_language", {"language": "de"}, DE, True),
    ("language:response_language", {"language": "de"}, EN, False),
    ("language:response_language", {"language": "hi"}, HI, True),
    ("language:response_language", {"language": "de"}, "12345 !!! 678", True),  # undetectable counts as followed
    ("change_case:english_capital", {}, EN.upper(), True),
    ("change_case:english_capital", {}, EN, False),
    ("change_case:english_capital", {}, DE.upper(), False),  # capitals, but German
    ("change_case:english_capital", {}, "12345 !!!", False),  # no cased character: not isupper
    ("change_case:english_lowercase", {}, EN.lower(), True),
    ("change_case:english_lowercase", {}, EN, False),
    ("change_case:english_lowercase", {}, DE.lower(), False),
    ("change_case:capital_word_frequency", {"capital_frequency": 3, "capital_relation": AT_LEAST}, "I LOVE NASA", True),
    ("change_case:capital_word_frequency", {"capital_frequency": 3, "capital_relation": AT_LEAST}, "I love NASA", False),
    ("change_case:capital_word_frequency", {"capital_frequency": 3, "capital_relation": LESS_THAN}, "I love NASA", True),
    ("change_case:capital_word_frequency", {"capital_frequency": 3, "capital_relation": LESS_THAN}, "I LOVE NASA", False),
    # DON'T is two tokens (DO, N'T): I, DO, N'T = 3
    ("change_case:capital_word_frequency", {"capital_frequency": 3, "capital_relation": AT_LEAST}, "I DON'T.", True),
    # length constraints
    ("length_constraints:number_words", {"num_words": 5, "relation": AT_LEAST}, "one two three four five", True),
    ("length_constraints:number_words", {"num_words": 5, "relation": AT_LEAST}, "one two three four", False),
    ("length_constraints:number_words", {"num_words": 5, "relation": LESS_THAN}, "one two three four", True),
    ("length_constraints:number_words", {"num_words": 5, "relation": LESS_THAN}, "one two three four five", False),
    ("length_constraints:number_words", {"num_words": 5, "relation": AT_LEAST}, "don't e-mail me now", True),  # 6
    ("length_constraints:number_sentences", {"num_sentences": 3, "relation": AT_LEAST}, "One. Two! Three?", True),
    ("length_constraints:number_sentences", {"num_sentences": 3, "relation": AT_LEAST}, "One. Two.", False),
    ("length_constraints:number_sentences", {"num_sentences": 3, "relation": LESS_THAN}, "One. Two.", True),
    ("length_constraints:number_sentences", {"num_sentences": 3, "relation": LESS_THAN}, "One. Two! Three?", False),
    ("length_constraints:number_sentences", {"num_sentences": 2, "relation": LESS_THAN}, "Mr. Smith came home.", True),
    ("length_constraints:number_paragraphs", {"num_paragraphs": 3}, "a\n***\nb\n***\nc", True),
    ("length_constraints:number_paragraphs", {"num_paragraphs": 3}, "a\n***\nb", False),
    ("length_constraints:number_paragraphs", {"num_paragraphs": 3}, "a\n***\nb\n***\nc\n***\nd", False),  # exact
    ("length_constraints:number_paragraphs", {"num_paragraphs": 3}, "***\na\n***\nb\n***\nc\n***", True),
    ("length_constraints:number_paragraphs", {"num_paragraphs": 3}, "a\n***\n\n***\nb\n***\nc", False),  # empty inside
    (
        "length_constraints:nth_paragraph_first_word",
        {"num_paragraphs": 3, "nth_paragraph": 2, "first_word": "however"},
        "Intro.\n\nHowever, this.\n\nEnd.",
        True,
    ),
    (
        "length_constraints:nth_paragraph_first_word",
        {"num_paragraphs": 3, "nth_paragraph": 2, "first_word": "however"},
        'Intro.\n\n"However" this.\n\nEnd.',
        True,
    ),
    (
        "length_constraints:nth_paragraph_first_word",
        {"num_paragraphs": 3, "nth_paragraph": 2, "first_word": "however"},
        "Intro.\n\nBut this.\n\nEnd.",
        False,
    ),
    (
        "length_constraints:nth_paragraph_first_word",
        {"num_paragraphs": 3, "nth_paragraph": 2, "first_word": "however"},
        "Intro.\n\nHowever, this.\n\nEnd.\n\nMore.",
        False,
    ),
    # detectable content
    ("detectable_content:number_placeholders", {"num_placeholders": 2}, "[name] lives at [address].", True),
    ("detectable_content:number_placeholders", {"num_placeholders": 2}, "[a][b]", True),
    ("detectable_content:number_placeholders", {"num_placeholders": 2}, "Only [name].", False),
    ("detectable_content:postscript", {"postscript_marker": "P.S."}, "Bye.\nP.S. call me", True),
    ("detectable_content:postscript", {"postscript_marker": "P.S."}, "Bye.\np. s. call me", True),
    ("detectable_content:postscript", {"postscript_marker": "P.S."}, "Bye. No postscript.", False),
    ("detectable_content:postscript", {"postscript_marker": "P.P.S"}, "Bye.\nP.P.S one more", True),
    ("detectable_content:postscript", {"postscript_marker": "P.P.S"}, "Bye.\nP.S. one more", False),
    # detectable format
    ("detectable_format:constrained_response", {}, "My answer is yes.", True),
    ("detectable_format:constrained_response", {}, "Well. My answer is maybe. Because.", True),
    ("detectable_format:constrained_response", {}, "My answer is yes", False),
    ("detectable_format:constrained_response", {}, "my answer is no.", False),
    ("detectable_format:json_format", {}, '{"a": 1}', True),
    ("detectable_format:json_format", {}, '```json\n{"a": [1, 2]}\n```', True),
    ("detectable_format:json_format", {}, "```JSON\n[]\n```", True),
    ("detectable_format:json_format", {}, 'Here it is: {"a": 1}', False),
    ("detectable_format:multiple_sections", {"section_spliter": "SECTION", "num_sections": 2}, "SECTION 1\nx\nSECTION 2\ny", True),
    ("detectable_format:multiple_sections", {"section_spliter": "SECTION", "num_sections": 2}, "SECTION 1\nx", False),
    ("detectable_format:multiple_sections", {"section_spliter": "SECTION", "num_sections": 2}, "Section 1\nSection 2", False),
    ("detectable_format:number_bullet_lists", {"num_bullets": 3}, "* a\n* b\n* c", True),
    ("detectable_format:number_bullet_lists", {"num_bullets": 3}, "* a\n- b\n  * c", True),
    ("detectable_format:number_bullet_lists", {"num_bullets": 3}, "**Intro**\n* a\n* b\n* c", True),
    ("detectable_format:number_bullet_lists", {"num_bullets": 3}, "* a\n* b", False),
    ("detectable_format:number_bullet_lists", {"num_bullets": 3}, "* a\n* b\n* c\n* d", False),  # exact
    ("detectable_format:number_highlighted_sections", {"num_highlights": 2}, "*one* and *two*", True),
    ("detectable_format:number_highlighted_sections", {"num_highlights": 2}, "**bold** and *it*", True),
    ("detectable_format:number_highlighted_sections", {"num_highlights": 2}, "*one* and * *", False),
    ("detectable_format:title", {}, "<<My Title>>\nText.", True),
    ("detectable_format:title", {}, "<< >>\nText.", False),
    ("detectable_format:title", {}, "<My Title>\nText.", False),
    ("detectable_format:title", {}, "<<My\nTitle>>", False),
    # combination
    ("combination:two_responses", {}, "Answer one.\n******\nAnswer two.", True),
    ("combination:two_responses", {}, "******\nAnswer one.\n******\nAnswer two.", True),
    ("combination:two_responses", {}, "Same.\n******\nSame.", False),
    ("combination:two_responses", {}, "A ****** B ****** C", False),
    ("combination:two_responses", {}, "A\n******\n\n******\nB", False),
    ("combination:repeat_prompt", {"prompt_to_repeat": "Write a poem."}, "write a poem. Roses are red.", True),
    ("combination:repeat_prompt", {"prompt_to_repeat": "Write a poem."}, "Sure! Write a poem.", False),
    # start/end
    ("startend:end_checker", {"end_phrase": "Any other questions?"}, "Done. Any other questions?", True),
    ("startend:end_checker", {"end_phrase": "Any other questions?"}, 'Done. "any other QUESTIONS?"\n', True),
    ("startend:end_checker", {"end_phrase": "Any other questions?"}, "Any other questions? Thanks.", False),
    ("startend:quotation", {}, '"Hello there."', True),
    ("startend:quotation", {}, '  "Hello there."\n', True),
    ("startend:quotation", {}, "Hello there.", False),
    ("startend:quotation", {}, '"', False),
    ("startend:quotation", {}, '"Hello there.', False),
]


def test_registry_has_the_25_published_instruction_ids():
    assert set(CHECKERS) == ALL_IDS == set(INSTRUCTION_IDS)
    assert {case[0] for case in CASES} == ALL_IDS


@pytest.mark.parametrize(("instruction_id", "kwargs", "response", "expected"), CASES)
def test_checker(instruction_id, kwargs, response, expected):
    assert CHECKERS[instruction_id](response, **kwargs) is expected


def test_every_checker_has_a_passing_and_a_failing_case():
    outcomes = {(i, e) for i, _, _, e in CASES}
    assert all((i, True) in outcomes and (i, False) in outcomes for i in ALL_IDS)


@pytest.mark.parametrize(
    ("instruction_id", "kwargs", "message"),
    [
        ("length_constraints:number_words", {"num_words": 5}, "missing argument(s) relation"),
        ("length_constraints:number_words", {"num_words": 5, "relation": "at most"}, "argument relation must be one of"),
        ("length_constraints:number_words", {"num_words": -1, "relation": AT_LEAST}, "non-negative integer"),
        ("length_constraints:number_words", {"num_words": "5", "relation": AT_LEAST}, "non-negative integer"),
        ("punctuation:no_comma", {"num_words": 5}, "unknown argument(s) num_words"),
        ("keywords:existence", {"keywords": ["(unclosed"]}, "not a valid regular expression"),
        ("keywords:letter_frequency", {"letter": "ab", "let_frequency": 1, "let_relation": AT_LEAST}, "single character"),
        (
            "length_constraints:nth_paragraph_first_word",
            {"num_paragraphs": 2, "nth_paragraph": 3, "first_word": "x"},
            "nth_paragraph 3 exceeds num_paragraphs 2",
        ),
    ],
)
def test_bad_arguments_raise_one_line_errors_naming_prompt_and_instruction(instruction_id, kwargs, message):
    row = {"key": 77, "prompt": "p", "instruction_id_list": [instruction_id], "kwargs": [kwargs]}
    with pytest.raises(ValueError) as err:
        make_prompt(row)
    text = str(err.value)
    assert message in text and "prompt 77" in text and repr(instruction_id) in text and "\n" not in text
    with pytest.raises(ValueError, match="instruction"):  # the checker itself validates too
        CHECKERS[instruction_id]("response", **kwargs)


def test_unknown_instruction_id():
    with pytest.raises(ValueError) as err:
        make_prompt({"key": 5, "prompt": "p", "instruction_id_list": ["keywords:nope"], "kwargs": [{}]})
    assert "prompt 5" in str(err.value) and "unknown instruction id 'keywords:nope'" in str(err.value)
    assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match="unknown instruction id"):
        get_checker("keywords:nope")


def test_none_valued_arguments_are_ignored():
    """The Hugging Face copy of the data lists every argument, unused ones as null."""
    row = {
        "key": 1,
        "prompt": "p",
        "instruction_id_list": ["punctuation:no_comma", "length_constraints:number_words"],
        "kwargs": [{"num_words": None, "relation": None}, {"num_words": 3, "relation": AT_LEAST, "keyword": None}],
    }
    prompt = make_prompt(row)
    assert prompt.kwargs == ({}, {"num_words": 3, "relation": AT_LEAST})


# --------------------------------------------------------------------------------------------------
# Text splitting and language identification
# --------------------------------------------------------------------------------------------------


def test_word_count_is_runs_of_word_characters():
    assert count_words("Hello, world! It's 2024; e-mail me.") == 8  # Hello world It s 2024 e mail me
    assert count_words("") == 0
    # Python's \w (as NLTK <= 3.10.2 uses) does not take combining marks: Hindi words split in pieces.
    assert count_words("हिंदी") == 2


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("Hello world. This is a test.", ["Hello world.", "This is a test."]),
        ("Mr. Smith went to Washington. He said hi.", ["Mr. Smith went to Washington.", "He said hi."]),
        ("Wow!!! Great job?! Yes.", ["Wow!!!", "Great job?!", "Yes."]),
        ('He said "Hi." Then he left.', ['He said "Hi."', "Then he left."]),
        ("(See above.) Next one.", ["(See above.)", "Next one."]),
        ("It costs 3.50 dollars. The end", ["It costs 3.50 dollars.", "The end"]),
        ("No punctuation\nat all\njust lines", ["No punctuation\nat all\njust lines"]),  # no break at newlines
        ("A list:\n* one\n* two\n\nDone.", ["A list:\n* one\n* two\n\nDone."]),
        ("1. Apple\n2. Banana", ["1.", "Apple\n2.", "Banana"]),  # Punkt: an ordinal before a capital ends a sentence
        ("See e.g. this one. etc. The next", ["See e.g. this one.", "etc.", "The next"]),
        ("Wait... What? Wait... no way", ["Wait...", "What?", "Wait... no way"]),
        ("U.S. Army is big. The U.S. is too.", ["U.S. Army is big.", "The U.S. is too."]),
        ("", []),
        ("   ", []),
    ],
)
def test_sentences_follow_punkt(text, sentences):
    assert split_sentences(text) == sentences
    assert count_sentences(text) == len(sentences)


def test_word_tokens_follow_nltk_word_tokenize():
    assert word_tokens("I DON'T KNOW.") == ["I", "DO", "N'T", "KNOW", "."]
    assert word_tokens("THE U.S. ARMY CANNOT WAIT.") == ["THE", "U.S.", "ARMY", "CAN", "NOT", "WAIT", "."]
    assert word_tokens('He said, "GO (NOW)!"') == ["He", "said", ",", "``", "GO", "(", "NOW", ")", "!", "''"]
    assert count_capital_words("**BOLD** TEXT and COVID-19") == 3
    assert count_capital_words("WORLD—WIDE") == 1  # NLTK 3.9.1 does not split at an em dash


def test_language_detection_is_offline_and_reproducible():
    assert detect_language(EN) == "en"
    assert detect_language(DE) == "de"
    assert detect_language(HI) == "hi"
    assert detect_language("12345 !!!") is None
    mixed = "Hallo world ciao"
    assert len({detect_language(mixed) for _ in range(5)}) == 1


# --------------------------------------------------------------------------------------------------
# Strict and loose evaluation
# --------------------------------------------------------------------------------------------------


def _prompt(key, ids_kwargs, text="Prompt text."):
    ids = [i for i, _ in ids_kwargs]
    return make_prompt({"key": key, "prompt": text, "instruction_id_list": ids, "kwargs": [k for _, k in ids_kwargs]})


def test_loose_variants_are_the_published_eight():
    assert LOOSE_VARIANTS[0] == "response" and len(LOOSE_VARIANTS) == 8
    assert loose_variants("first *a*\n middle \nlast") == [
        "first *a*\n middle \nlast",
        "middle \nlast",
        "first *a*\n middle",
        "middle",
        "first a\n middle \nlast",
        "middle \nlast",
        "first a\n middle",
        "middle",
    ]


@pytest.mark.parametrize(
    ("instruction_id", "kwargs", "response", "variant"),
    [
        # A chatty first line breaks the instruction strictly, not loosely.
        ("startend:quotation", {}, 'Sure, here it is:\n"Hello world."', "remove_first_line"),
        ("punctuation:no_comma", {}, "Sure, here it is:\nNo commas in the answer.", "remove_first_line"),
        ("change_case:english_capital", {}, "Sure, here it is:\n" + EN.upper(), "remove_first_line"),
        # A chatty last line.
        ("detectable_format:json_format", {}, '```json\n{"a": 1}\n```\nHope this helps!', "remove_last_line"),
        # Markdown asterisks.
        (
            "startend:end_checker",
            {"end_phrase": "Is there anything else I can help with?"},
            "Done. **Is there anything else I can help with?**",
            "no_asterisks",
        ),
        ("detectable_format:title", {}, "Sure:\n<<A title>>\nbody\nBye", "response"),  # followed strictly too
    ],
)
def test_loose_versus_strict(instruction_id, kwargs, response, variant):
    record = evaluate_prompt(_prompt(1, [(instruction_id, kwargs)]), response)
    assert record["follow_instruction_list_loose"] == [True]
    assert record["loose_variant"] == [variant]
    assert record["follow_instruction_list_strict"] == [variant == "response"]


def test_blank_response_follows_nothing():
    prompt = _prompt(1, [("punctuation:no_comma", {}), ("keywords:forbidden_words", {"forbidden_words": ["x"]})])
    for response in ("", "  \n "):
        record = evaluate_prompt(prompt, response)
        assert record["follow_instruction_list_strict"] == [False, False]
        assert record["follow_instruction_list_loose"] == [False, False]


def test_scores_are_the_published_metric_definitions():
    prompts = [
        _prompt(1, [("punctuation:no_comma", {}), ("startend:quotation", {})], "one"),
        _prompt(2, [("punctuation:no_comma", {})], "two"),
        _prompt(3, [("detectable_format:title", {}), ("punctuation:no_comma", {}), ("startend:quotation", {})], "three"),
    ]
    responses = {
        1: '"No commas."',  # 2/2 strict
        "2": "Sure, here:\nno commas",  # key as a string; 0/1 strict, 1/1 loose
        "three": "<<T>> but, no quotes",  # prompt text; 1/3 strict, 1/3 loose
    }
    result = score(prompts, responses)
    assert [r["key"] for r in result["records"]] == [1, 2, 3]
    assert result["prompt_level_strict_accuracy"] == pytest.approx(1 / 3)
    assert result["instruction_level_strict_accuracy"] == pytest.approx(3 / 6)
    assert result["prompt_level_loose_accuracy"] == pytest.approx(2 / 3)
    assert result["instruction_level_loose_accuracy"] == pytest.approx(4 / 6)
    assert result["counts"] == {
        "prompts": 3,
        "instructions": 6,
        "prompts_followed_strict": 1,
        "prompts_followed_loose": 2,
        "instructions_followed_strict": 3,
        "instructions_followed_loose": 4,
    }
    comma = result["by_instruction"]["punctuation:no_comma"]
    assert comma == {"count": 3, "strict_accuracy": pytest.approx(1 / 3), "loose_accuracy": pytest.approx(2 / 3)}
    assert result["by_category"]["startend"]["count"] == 2
    json.dumps(result)  # records and scores are JSON-serializable


def test_missing_responses_are_an_error():
    prompts = [_prompt(1, [("punctuation:no_comma", {})], "one"), _prompt(2, [("punctuation:no_comma", {})], "two")]
    with pytest.raises(ValueError, match=r"no response for 1 of 2 IFEval prompts \(keys 2\)"):
        score(prompts, {1: "fine"})
    with pytest.raises(ValueError, match="prompt 1: the response must be a string"):
        score(prompts, {1: 42, 2: "x"})


def test_saved_records_are_reused_and_changed_ones_recomputed():
    prompts = [_prompt(1, [("punctuation:no_comma", {})], "one"), _prompt(2, [("punctuation:no_comma", {})], "two")]
    first = score(prompts, {1: "a, b", 2: "no comma"})["records"]
    saved = [json.loads(json.dumps(r)) for r in first]
    saved[0]["marker"] = "reused"
    again = score(prompts, {1: "a, b", 2: "now, a comma"}, previous=saved)
    assert again["records"][0]["marker"] == "reused"
    assert "marker" not in again["records"][1] and again["records"][1]["follow_instruction_list_strict"] == [False]
    assert aggregate(again["records"])["counts"]["instructions_followed_strict"] == 0


# --------------------------------------------------------------------------------------------------
# Loader
# --------------------------------------------------------------------------------------------------


def _write(tmp_path, lines):
    path = tmp_path / "ifeval.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


GOOD = json.dumps({"key": 1, "prompt": "Write.", "instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]})


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "expected a JSON object"),
        (json.dumps({"key": 2, "prompt": "x", "kwargs": []}), "missing field(s) instruction_id_list"),
        (
            json.dumps({"key": 2, "prompt": "x", "instruction_id_list": ["punctuation:no_comma"], "kwargs": []}),
            "prompt 2: kwargs must be a list with one object per instruction",
        ),
        (
            json.dumps({"key": 2, "prompt": "x", "instruction_id_list": ["bogus:id"], "kwargs": [{}]}),
            "prompt 2: unknown instruction id 'bogus:id'",
        ),
        (
            json.dumps(
                {"key": 2, "prompt": "x", "instruction_id_list": ["keywords:frequency"], "kwargs": [{"keyword": "a"}]}
            ),
            "prompt 2: instruction 'keywords:frequency': missing argument(s) frequency, relation",
        ),
        (GOOD, "prompt 1: duplicate key (first on line 1)"),
    ],
)
def test_loader_errors_name_file_and_line(tmp_path, line, message):
    path = _write(tmp_path, [GOOD, "", line])
    with pytest.raises(ValueError) as err:
        load_ifeval(path)
    assert str(err.value).startswith(f"{path}:3: ") and message in str(err.value)
    assert "\n" not in str(err.value)


def test_loader_skips_blank_lines_and_honours_limit(tmp_path):
    second = GOOD.replace('"key": 1', '"key": 2')
    path = _write(tmp_path, ["", GOOD, "  ", second, "{broken"])
    assert [p.key for p in load_ifeval(path, limit=2)] == [1, 2]  # stops before the broken line
    with pytest.raises(ValueError, match=":5: not valid JSON"):
        load_ifeval(path)


# --------------------------------------------------------------------------------------------------
# The real 541 prompts
# --------------------------------------------------------------------------------------------------


def test_real_prompts_all_scored_with_echoed_responses(shared_data):
    path = shared_data / "ifeval" / "input_data.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    prompts = load_ifeval(path)
    assert len(prompts) == len(rows) == 541
    assert {i for row in rows for i in row["instruction_id_list"]} == set(CHECKERS) == ALL_IDS

    result = score(prompts, {p.key: p.prompt for p in prompts})
    records = result["records"]
    assert [r["key"] for r in records] == [row["key"] for row in rows]
    n_instructions = sum(len(row["instruction_id_list"]) for row in rows)
    assert result["counts"]["prompts"] == 541 and result["counts"]["instructions"] == n_instructions
    for mode in ("strict", "loose"):
        follows = [r[f"follow_instruction_list_{mode}"] for r in records]
        assert all(len(f) == len(r["instruction_id_list"]) for f, r in zip(follows, records))
        assert result[f"prompt_level_{mode}_accuracy"] == pytest.approx(sum(all(f) for f in follows) / 541)
        assert result[f"instruction_level_{mode}_accuracy"] == pytest.approx(sum(map(sum, follows)) / n_instructions)
        for r, f in zip(records, follows):
            assert r[f"follow_all_instructions_{mode}"] == all(f)
    assert sum(v["count"] for v in result["by_instruction"].values()) == n_instructions
    # Loose is an upper bound of strict, per instruction.
    assert all(
        lo or not s
        for r in records
        for s, lo in zip(r["follow_instruction_list_strict"], r["follow_instruction_list_loose"])
    )
    # Echoing the prompt repeats it word for word: every repeat_prompt instruction is followed loosely.
    assert result["by_instruction"]["combination:repeat_prompt"]["loose_accuracy"] > 0.9
    assert 0 < result["prompt_level_strict_accuracy"] < result["prompt_level_loose_accuracy"] < 1

    # Looking responses up by prompt text gives the same scores; blank responses follow nothing.
    by_text = score(prompts, {p.prompt: p.prompt for p in prompts})
    assert by_text["instruction_level_loose_accuracy"] == result["instruction_level_loose_accuracy"]
    blank = score(prompts, {p.key: "" for p in prompts})
    assert blank["instruction_level_loose_accuracy"] == 0.0 and blank["counts"]["prompts"] == 541
