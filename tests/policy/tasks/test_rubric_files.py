"""Rubric files (RuscaRL/HealthBench) and VerIF-style rows (judge_rl.policy.tasks.rubric_files), on hand-made
files: what is read, and the one-line "<file> row <n>: <reason>" errors, code refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judge_rl.policy.tasks.prompts import CONSTRAINT_POINTS, Criterion, criterion_text
from judge_rl.policy.tasks.rubric_files import SOFT_POINTS, load_rubric_file, load_verif_file


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


HEALTHBENCH_ROW = {
    "prompt": [
        {"role": "user", "content": "My knee hurts after running."},
        {"role": "assistant", "content": "How long has it hurt?"},
        {"role": "user", "content": "Two days. Should I keep running?"},
    ],
    "rubrics": [
        {"criterion": "Advises rest for a few days.", "points": 5, "tags": ["level:example", "axis:accuracy"]},
        {"criterion": "Recommends running through sharp pain.", "points": -7, "tags": ["axis:accuracy"]},
        {"criterion": "Suggests seeing a clinician if pain persists.", "points": 3},
    ],
    "example_tags": ["theme:context_seeking"],
    "prompt_id": "hb-001",
    "ideal_completions_data": {"ideal_completion": "Rest for a few days and ice the knee."},
    "canary": "ignored",
}

RUSCARL_ROW = {
    "prompt": [{"role": "user", "content": "Explain why the sky is blue."}],
    "data_source": "healthbench",
    "ability": "chat",
    "reward_model": {"rubrics": [{"criterion": "Mentions Rayleigh scattering.", "points": 4}], "style": "rubric"},
}


def error_of(loader, path: Path) -> str:
    with pytest.raises(ValueError) as e:
        loader(path)
    message = str(e.value)
    assert "\n" not in message
    return message


# --------------------------------------------------------------------------------------------------
# (a) rubric files
# --------------------------------------------------------------------------------------------------


def test_rubric_file_reads_healthbench_and_ruscarl_rows(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "rubrics.jsonl", [HEALTHBENCH_ROW, "", RUSCARL_ROW, {"prompt": "Plain?", "rubrics": [
        {"criterion": "Answers.", "points": 1.5}]}])  # fmt: skip
    hb, rc, plain = load_rubric_file(path)
    assert hb.prompt_id == "hb-001"
    assert hb.prompt == "Two days. Should I keep running?"
    assert hb.chat() == HEALTHBENCH_ROW["prompt"]
    assert hb.rubric == (
        Criterion("Advises rest for a few days.", 5.0, ("level:example", "axis:accuracy")),
        Criterion("Recommends running through sharp pain.", -7.0, ("axis:accuracy",)),
        Criterion("Suggests seeing a clinician if pain persists.", 3.0, ()),
    )
    assert hb.reference == "Rest for a few days and ice the knee."
    assert hb.meta == {"format": "rubric", "example_tags": ["theme:context_seeking"]}
    assert hb.instruction_id_list == ()
    # RuscaRL: rubrics under reward_model; one user message reads as a plain prompt; id from file and row
    assert rc.prompt_id == "rubrics-3" and rc.prompt == "Explain why the sky is blue." and rc.messages is None
    assert rc.rubric == (Criterion("Mentions Rayleigh scattering.", 4.0),)
    assert plain.prompt_id == "rubrics-4" and plain.rubric[0].points == 1.5 and plain.reference is None
    assert [p.prompt_id for p in load_rubric_file(path, limit=2)] == ["hb-001", "rubrics-3"]


def test_rubric_file_json_list(tmp_path: Path) -> None:
    path = tmp_path / "list.json"
    path.write_text(json.dumps([RUSCARL_ROW, {**RUSCARL_ROW, "id": 7}]), encoding="utf-8")
    assert [p.prompt_id for p in load_rubric_file(path)] == ["list-1", "7"]


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        ({"prompt": "Hi"}, "missing field 'rubrics' (or reward_model.rubrics)"),
        ({"rubrics": [{"criterion": "a", "points": 1}]}, "missing field 'prompt'"),
        ({"prompt": "Hi", "rubrics": []}, "rubrics must be a non-empty list of {criterion, points, tags} objects"),
        ({"prompt": "Hi", "rubrics": [{"criterion": "a", "points": 0}]},
         "rubrics item 1: criterion points must be a finite non-zero number, got 0"),
        ({"prompt": "Hi", "rubrics": [{"criterion": "a"}]}, "rubrics item 1: rubric item is missing 'points'"),
        ({"prompt": "Hi", "rubrics": [{"criterion": "a", "points": 1, "weight": 2}]},
         "rubrics item 1: unknown rubric item field(s) weight"),
        ({"prompt": "Hi", "rubrics": [{"criterion": "a", "points": -1}]}, "rubrics has no criterion with positive points"),
        ({"prompt": "Hi", "rubrics": [{"criterion": "a", "points": 1, "tags": {"verifier": "rule", "function": "f"}}]},
         "rubrics item 1: tags must be a list of strings (RuscaRL's rule-verifier tags are not supported; give rules "
         "as VerIF-style rows)"),
        ({"prompt": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Yo"}],
          "rubrics": [{"criterion": "a", "points": 1}]},
         "a chat prompt must end with a user message {role: 'user', content: '...'}"),
        ({"prompt": 3, "rubrics": [{"criterion": "a", "points": 1}]},
         "prompt must be a string or a list of chat messages, got int"),
        ({"prompt": "Hi", "rubrics": [{"criterion": "a", "points": 1}],
          "reward_model": {"rubrics": [{"criterion": "a", "points": 1}]}},
         "rubrics given twice (top level and reward_model.rubrics)"),
        ({"prompt": "Hi", "rubrics": [{"criterion": "a", "points": 1}], "reference": ""},
         "reference must be a non-empty string"),
        ([1, 2], "row is a list, not an object"),
    ],
)  # fmt: skip
def test_rubric_file_errors_name_file_and_row(tmp_path: Path, row, reason: str) -> None:
    path = write_jsonl(tmp_path / "bad.jsonl", [RUSCARL_ROW, row])
    assert error_of(load_rubric_file, path) == f"{path} row 2: {reason}"


def test_rubric_file_bad_json_duplicates_and_missing_file(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "bad.jsonl", [RUSCARL_ROW, "{not json"])
    reason = "not valid JSON (Expecting property name enclosed in double quotes at column 2)"
    assert error_of(load_rubric_file, path) == f"{path} row 2: {reason}"
    path = write_jsonl(tmp_path / "dup.jsonl", [{**RUSCARL_ROW, "id": "x"}, {**RUSCARL_ROW, "id": "x"}])
    assert error_of(load_rubric_file, path) == f"{path} row 2: duplicate prompt id 'x' (first in row 1)"
    with pytest.raises(FileNotFoundError):
        load_rubric_file(tmp_path / "absent.jsonl")
    other = tmp_path / "rows.csv"
    other.write_text("a,b\n")
    assert error_of(load_rubric_file, other) == f"{other}: unsupported file type (expected .jsonl or .json)"


# --------------------------------------------------------------------------------------------------
# (b) VerIF-style rows
# --------------------------------------------------------------------------------------------------

VERIF_ROW = {
    "id": "v1",
    "prompt": "Describe the tides. Use the word 'moon' and no commas. Keep a playful tone.",
    "rules": [
        {"instruction_id": "keywords:existence", "kwargs": {"keywords": ["moon"]}},
        {"instruction_id": "punctuation:no_comma"},
    ],
    "soft_constraints": ["The tone is playful."],
}


def test_verif_rows_read_rules_by_name_and_build_rubric(tmp_path: Path) -> None:
    parallel = {
        "prompt": "Answer briefly.",
        "instruction_id_list": ["length_constraints:number_words"],
        "kwargs": [{"num_words": 50, "relation": "less than"}],
    }
    path = write_jsonl(tmp_path / "verif.jsonl", [VERIF_ROW, parallel])
    v1, v2 = load_verif_file(path)
    assert v1.prompt_id == "v1"
    assert v1.instruction_id_list == ("keywords:existence", "punctuation:no_comma")
    assert v1.kwargs == ({"keywords": ["moon"]}, {})
    assert v1.soft_constraints == ("The tone is playful.",)
    assert v1.rubric == (
        Criterion("The response includes the words 'moon'.", CONSTRAINT_POINTS,
                  ("axis:instruction_following", "instruction_id:keywords:existence")),
        Criterion("The response contains no commas.", CONSTRAINT_POINTS,
                  ("axis:instruction_following", "instruction_id:punctuation:no_comma")),
        Criterion("The tone is playful.", SOFT_POINTS, ("axis:soft_constraint",)),
    )  # fmt: skip
    assert v1.meta == {"format": "verif"}
    assert v2.prompt_id == "verif-2" and v2.soft_constraints == ()
    words = {"num_words": 50, "relation": "less than"}
    assert v2.rubric[0].criterion == criterion_text("length_constraints:number_words", words)
    assert v2.rubric[0].criterion == "The response is fewer than 50 words long."
    # an explicit rubric is kept as given
    own = {**VERIF_ROW, "rubric": [{"criterion": "Is playful.", "points": 2}, {"criterion": "Rambles.", "points": -1}]}
    (v3,) = load_verif_file(write_jsonl(tmp_path / "own.jsonl", [own]))
    assert v3.rubric == (Criterion("Is playful.", 2.0), Criterion("Rambles.", -1.0))


CODE = "def check(response):\n    return ',' not in response\n"


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        # VerIF's own rows: checker names plus python source
        ({"prompt": "Hi", "checkers": ["[rule] no commas"], "functions": [CODE]},
         "row carries python code (field 'functions'); rule checkers must be IFEval instruction ids with "
         "arguments, code is never run"),
        ({**VERIF_ROW, "rules": [{"instruction_id": "punctuation:no_comma", "code": CODE}]},
         "rule 1 carries python code (field 'code'); give an instruction_id and kwargs"),
        ({**VERIF_ROW, "rules": [CODE]},
         "rule 1 looks like python code; give an IFEval instruction_id and kwargs, code is never run"),
        ({**VERIF_ROW, "rules": [{"instruction_id": "keywords:existence",
                                  "kwargs": {"keywords": ["lambda r: 'moon' in r"]}}]},
         "rule 1 looks like python code; give an IFEval instruction_id and kwargs, code is never run"),
        ({"prompt": "Hi", "instruction_id_list": ["import os"], "kwargs": [{}]},
         "instruction_id_list looks like python code; give IFEval instruction ids and arguments"),
        ({**VERIF_ROW, "rules": [{"instruction_id": "no_commas_please"}]},
         "prompt 'v1': unknown instruction id 'no_commas_please'; known: "),
        ({**VERIF_ROW, "rules": [{"instruction_id": "keywords:existence", "kwargs": {"keyword": ["moon"]}}]},
         "prompt 'v1': instruction 'keywords:existence': unknown argument(s) keyword; takes keywords"),
        ({**VERIF_ROW, "rules": [{"instruction_id": "punctuation:no_comma", "args": {}}]},
         "rule 1 must be an object with 'instruction_id' and optional 'kwargs', got "),
        ({**VERIF_ROW, "checkers": ["x"]}, "unknown field(s) checkers; known: "),
        ({"prompt": "Hi", "rules": []}, "no rules and no soft constraints"),
        ({**VERIF_ROW, "soft_constraints": "be playful"}, "soft_constraints must be a list of non-empty strings"),
        ({**VERIF_ROW, "instruction_id_list": []}, "give either 'rules' or 'instruction_id_list' with 'kwargs', not both"),
        ({"prompt": "Hi", "instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}, {}]},
         "kwargs must be a list with one object per instruction (1)"),
    ],
)  # fmt: skip
def test_verif_errors_and_code_refused(tmp_path: Path, row, reason: str) -> None:
    path = write_jsonl(tmp_path / "bad.jsonl", [VERIF_ROW | {"id": "ok"}, row])
    message = error_of(load_verif_file, path)
    assert message.startswith(f"{path} row 2: {reason}"), message


def test_verif_soft_only_row(tmp_path: Path) -> None:
    (p,) = load_verif_file(write_jsonl(tmp_path / "soft.jsonl", [{"prompt": "Hi", "soft_constraints": ["Be warm."]}]))
    assert p.instruction_id_list == () and p.rubric == (Criterion("Be warm.", SOFT_POINTS, ("axis:soft_constraint",)),)
