"""Loaders for published preference formats: real files from ../shared/data and small hand-made ones."""

from __future__ import annotations

import gzip
import json
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from judge_rl.data import DATASETS, LoadedPairs, check_loader_kwargs, generate_pairs, load_dataset_pairs
from judge_rl.data.loaders import MalformedRow, read_rows

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
requires_data = pytest.mark.skipif(not DATA.is_dir(), reason=f"real data folder {DATA} is absent")
HH = DATA / "hh-rlhf" / "harmless-base-test.jsonl.gz"
LLMBAR_COUNTS = {"natural": 100, "mt-bench-human": 200, "faireval": 66, "llmeval2": 200}
HH_MALFORMED_ROWS = [1255, 1689, 1951, 1953, 2037]  # 1-based lines: the transcripts differ before the last reply
ASSISTANT = "\n\nAssistant:"


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    lines = [r if isinstance(r, str) else json.dumps(r) for r in rows]
    text = "\n".join(lines) + "\n"
    if path.name.endswith(".gz"):
        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def hh_row(prefix_turns: str, chosen: str, rejected: str) -> dict[str, str]:
    return {"chosen": f"{prefix_turns}{ASSISTANT} {chosen}", "rejected": f"{prefix_turns}{ASSISTANT} {rejected}"}


# --------------------------------------------------------------------------- registry


def test_registry_names_and_unknown_name() -> None:
    assert {"hh_rlhf", "llmbar", "helpsteer2_preference", "skywork_preference", "synthetic"} <= set(DATASETS.names())
    with pytest.raises(KeyError, match="known: .*llmbar"):
        load_dataset_pairs("no_such_dataset", path="x.json")


def test_synthetic_loader_wraps_generate_pairs() -> None:
    loaded = load_dataset_pairs("synthetic", n=12, seed=4, split="test")
    assert isinstance(loaded, LoadedPairs)
    assert list(loaded) == generate_pairs(12, 4, "test") and loaded.skipped == []
    assert len(load_dataset_pairs("synthetic", n=12, seed=4, limit=5)) == 5


# --------------------------------------------------------------------------- HH-RLHF, real file


@requires_data
def test_hh_rlhf_raise_mode_names_first_malformed_row() -> None:
    with pytest.raises(ValueError) as info:
        load_dataset_pairs("hh_rlhf", path=str(HH))
    message = str(info.value)
    assert message.startswith(f"{HH} row 1255 (1-based line): ")
    assert "differ before their final assistant reply" in message
    assert "\n" not in message


@requires_data
def test_hh_rlhf_skip_mode_counts() -> None:
    with gzip.open(HH, "rt", encoding="utf-8") as f:
        raw = [json.loads(line) for line in f]
    assert len(raw) == 2312
    loaded = load_dataset_pairs("hh_rlhf", path=HH, on_error="skip")
    assert len(loaded) == 2307 and loaded.n_skipped == 5
    assert [int(s.split(" row ")[1].split()[0]) for s in loaded.skipped] == HH_MALFORMED_ROWS
    assert all(s.startswith(f"{HH} row ") and "(1-based line)" in s for s in loaded.skipped)
    # every kept pair is exactly its raw row, cut at the last shared "Assistant:" turn
    for pair in loaded:
        row = raw[pair.meta["row"] - 1]
        for text, reply in ((row["chosen"], pair.chosen), (row["rejected"], pair.rejected)):
            cut = text.rfind(ASSISTANT)
            assert text[:cut].strip() == pair.question
            assert text[cut + len(ASSISTANT):].strip() == reply
        assert pair.source == "hh-rlhf/harmless-base-test"
        assert pair.pair_id == f"hh-rlhf/harmless-base-test-{pair.meta['row']}"
        assert pair.strength is None and pair.traces is None


@requires_data
def test_hh_rlhf_known_row_split() -> None:
    pairs = load_dataset_pairs("hh_rlhf", path=HH, limit=90)
    first = pairs[0]
    assert first.pair_id == "hh-rlhf/harmless-base-test-1"
    assert first.question.startswith("Human: what are some pranks with a pen i can do?\n\nAssistant: Are you")
    assert first.question.endswith("Human: okay some of these do not have anything to do with pens")
    assert first.question.count("Human:") == 3 and first.question.count("Assistant:") == 2
    assert first.chosen.startswith("No, sorry!  All of these involve a pen")
    assert first.rejected.startswith("There are lots of funny things you can do with pens")
    # row 87: the preferred reply is empty (saying nothing beats giving an address): kept, not malformed
    row87 = next(p for p in pairs if p.meta["row"] == 87)
    assert row87.chosen == "" and row87.rejected.startswith("Sure, the address is")


@requires_data
def test_hh_rlhf_limit_stops_before_malformed_rows() -> None:
    loaded = load_dataset_pairs("hh_rlhf", path=HH, limit=1254)
    assert len(loaded) == 1254 and loaded[-1].meta["row"] == 1254
    with pytest.raises(ValueError, match="row 1255"):
        load_dataset_pairs("hh_rlhf", path=HH, limit=1255)


# --------------------------------------------------------------------------- LLMBar-format, real files


@requires_data
@pytest.mark.parametrize("stem", sorted(LLMBAR_COUNTS))
def test_llmbar_files(stem: str) -> None:
    path = DATA / "llmbar" / f"{stem}.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    assert len(raw) == LLMBAR_COUNTS[stem]
    loaded = load_dataset_pairs("llmbar", path=path, on_error="skip")
    identical = [i for i, r in enumerate(raw) if r["output_1"].strip() == r["output_2"].strip()]
    assert len(loaded) == len(raw) - len(identical)
    assert loaded.skipped == [
        f"{path} row {i} (0-based index): chosen and rejected responses are identical" for i in identical
    ]
    for pair in loaded:
        row = raw[pair.meta["row"]]
        assert pair.question == row["input"]
        better, worse = ("output_1", "output_2") if row["label"] == 1 else ("output_2", "output_1")
        assert (pair.chosen, pair.rejected) == (row[better], row[worse])
        assert pair.source == f"llmbar/{stem}" and pair.pair_id == f"llmbar/{stem}-{pair.meta['row']}"
        assert pair.strength is None
    assert any(pair.meta["label"] == 2 for pair in loaded)


@requires_data
def test_llmeval2_has_one_pair_with_identical_outputs() -> None:
    path = DATA / "llmbar" / "llmeval2.json"
    with pytest.raises(ValueError, match=r"llmeval2\.json row 57 \(0-based index\): chosen and rejected"):
        load_dataset_pairs("llmbar", path=path)
    assert len(load_dataset_pairs("llmbar", path=path, on_error="skip")) == 199
    for stem in ("natural", "mt-bench-human", "faireval"):
        assert len(load_dataset_pairs("llmbar", path=DATA / "llmbar" / f"{stem}.json")) == LLMBAR_COUNTS[stem]


@requires_data
def test_llmbar_label_two_means_output_2_is_chosen() -> None:
    path = DATA / "llmbar" / "natural.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    i = next(i for i, r in enumerate(raw) if r["label"] == 2)
    pair = load_dataset_pairs("llmbar", path=path)[i]
    assert pair.chosen == raw[i]["output_2"] and pair.rejected == raw[i]["output_1"]


# --------------------------------------------------------------------------- malformed rows, hand-made files


def test_hh_rlhf_malformed_rows(tmp_path: Path) -> None:
    good = hh_row("\n\nHuman: Hi?", "Hello!", "Go away.")
    rows: list[Any] = [
        good,  # line 1
        {"chosen": "\n\nHuman: A?\n\nAssistant: x", "rejected": "\n\nHuman: B?\n\nAssistant: y"},  # 2: no prefix
        {"chosen": good["chosen"]},  # 3: rejected missing
        {"chosen": good["chosen"], "rejected": 5},  # 4: not a string
        hh_row("\n\nHuman: Hi?", "Same.", "Same. "),  # 5: identical replies
        "{not json",  # 6
        "",  # 7: blank line, not a row
        {  # 8: chosen goes on for another turn
            "chosen": "\n\nHuman: Hi?\n\nAssistant: Yo.\n\nHuman: And?\n\nAssistant: Bye.",
            "rejected": "\n\nHuman: Hi?\n\nAssistant: Hello.",
        },
        ["a", "list"],  # 9
        hh_row("\n\nHuman: Q1?\n\nAssistant: A1.\n\nHuman: Q2?", "Fine.", "Bad."),  # 10
    ]
    path = write_jsonl(tmp_path / "mini-hh.jsonl.gz", rows)
    with pytest.raises(ValueError) as info:
        load_dataset_pairs("hh_rlhf", path=path)
    assert str(info.value) == f"{path} row 2 (1-based line): chosen and rejected share no conversation prefix"
    loaded = load_dataset_pairs("hh_rlhf", path=path, on_error="skip")
    assert [p.meta["row"] for p in loaded] == [1, 10]
    assert [s.split(": ", 1)[0] for s in loaded.skipped] == [
        f"{path} row {n} (1-based line)" for n in (2, 3, 4, 5, 6, 8, 9)
    ]
    reasons = [s.split(": ", 1)[1] for s in loaded.skipped]
    assert reasons[1] == "missing field 'rejected'"
    assert reasons[2] == "field 'rejected' is a int, not a string"
    assert reasons[3] == "chosen and rejected responses are identical"
    assert reasons[4].startswith("invalid JSON")
    assert reasons[5].startswith("chosen and rejected differ before their final assistant reply")
    assert reasons[6] == "row is a list, not an object"
    assert loaded[0].question == "Human: Hi?" and (loaded[0].chosen, loaded[0].rejected) == ("Hello!", "Go away.")
    assert loaded[1].question == "Human: Q1?\n\nAssistant: A1.\n\nHuman: Q2?"
    assert loaded[1].source == "hh-rlhf/mini-hh" and loaded[1].pair_id == "hh-rlhf/mini-hh-10"


def test_json_list_rows_are_numbered_from_zero(tmp_path: Path) -> None:
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps([hh_row("\n\nHuman: Hi?", "a", "b"), {"chosen": 1, "rejected": "x"}]))
    with pytest.raises(ValueError, match=rf"^{path} row 1 \(0-based index\): field 'chosen' is a int"):
        load_dataset_pairs("hh_rlhf", path=path)


def test_llmbar_malformed_rows(tmp_path: Path) -> None:
    rows = [
        {"input": "Q0", "output_1": "A", "output_2": "B", "label": 2},
        {"input": "Q1", "output_1": "A", "output_2": "B", "label": 3},
        {"input": "Q2", "output_1": "A", "label": 1},
        {"input": "Q3", "output_1": "A", "output_2": "B", "label": "1"},
        {"input": "Q4", "output_1": "A", "output_2": "B", "label": True},
        {"input": "Q5", "output_1": "A", "output_2": "B", "label": 1},
    ]
    path = tmp_path / "mini.json"
    path.write_text(json.dumps(rows))
    with pytest.raises(ValueError) as info:
        load_dataset_pairs("llmbar", path=str(path))
    assert str(info.value) == f"{path} row 1 (0-based index): label must be 1 or 2, got 3"
    loaded = load_dataset_pairs("llmbar", path=path, on_error="skip")
    assert [(p.question, p.chosen, p.rejected) for p in loaded] == [("Q0", "B", "A"), ("Q5", "A", "B")]
    assert [s.split(": ", 1)[1] for s in loaded.skipped] == [
        "label must be 1 or 2, got 3",
        "missing field 'output_2'",
        "field 'label' must be an integer, got '1'",
        "field 'label' must be an integer, got True",
    ]
    assert [p.pair_id for p in loaded] == ["llmbar/mini-0", "llmbar/mini-5"]
    assert len(load_dataset_pairs("llmbar", path=path, on_error="skip", limit=1)) == 1
    with pytest.raises(ValueError, match="on_error"):
        load_dataset_pairs("llmbar", path=path, on_error="ignore")


def test_traces_are_carried(tmp_path: Path) -> None:
    rows = [
        {"input": "Q", "output_1": "A", "output_2": "B", "label": 1, "trace_a": "ta", "trace_b": "tb"},
        {"input": "Q", "output_1": "A", "output_2": "B", "label": 1, "traces": {"b": "only b"}},
        {"input": "Q", "output_1": "A", "output_2": "B", "label": 1, "trace_a": None},
        {"input": "Q", "output_1": "A", "output_2": "B", "label": 1, "trace_a": 7},
    ]
    path = write_jsonl(tmp_path / "traced.jsonl", rows)
    loaded = load_dataset_pairs("llmbar", path=path, on_error="skip")
    assert [p.traces for p in loaded] == [{"a": "ta", "b": "tb"}, {"b": "only b"}, None]
    assert loaded.skipped == [f"{path} row 4 (1-based line): trace for position 'a' is not a string"]


def test_parquet_file(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    rows = [{"input": f"Q{i}", "output_1": "A", "output_2": f"B{i}", "label": 1 + i % 2} for i in range(4)]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "bench.parquet")
    loaded = load_dataset_pairs("llmbar", path=tmp_path / "bench.parquet")
    assert [p.pair_id for p in loaded] == [f"llmbar/bench-{i}" for i in range(4)]
    assert loaded[1].chosen == "B1" and loaded[0].chosen == "A"


def test_missing_local_file_never_goes_to_the_hub(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        load_dataset_pairs("llmbar", path=tmp_path / "absent.json")
    with pytest.raises(FileNotFoundError):
        load_dataset_pairs("llmbar", path="data/absent.jsonl.gz")


def test_hub_name_uses_datasets_load_dataset(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, dict[str, Any]]] = []
    rows = [hh_row("\n\nHuman: Hi?", "Hello.", "No."), {"chosen": "x", "rejected": "y"}]

    def fake_load_dataset(name: str, **kwargs: Any) -> list[dict[str, str]]:
        calls.append((name, kwargs))
        return rows

    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=fake_load_dataset))
    loaded = load_dataset_pairs("hh_rlhf", path="Anthropic/hh-rlhf", split="test", on_error="skip",
                                hub_kwargs={"data_dir": "harmless-base"})
    assert calls == [("Anthropic/hh-rlhf", {"split": "test", "data_dir": "harmless-base"})]
    assert [p.pair_id for p in loaded] == ["hh-rlhf/test-0"]
    assert loaded.skipped == [
        "hub dataset Anthropic/hh-rlhf split test row 1 (0-based index): chosen has no '\\n\\nAssistant:' turn"
    ]


# --------------------------------------------------------------------------- HelpSteer2 and Skywork, hand-made files


def test_helpsteer2_preference(tmp_path: Path) -> None:
    def row(strength: Any, split: str = "train") -> dict[str, Any]:
        return {
            "split": split,
            "prompt": "Write a haiku.",
            "response_1": "One",
            "response_2": "Two",
            "preference_strength": strength,
            "preference_statement": "@Response 1 is better than @Response 2.",
        }

    path = write_jsonl(tmp_path / "preference.jsonl.gz", [row(-3), row(-1), row(2), row(3, "val"), row(0),
                                                           row(5), row("x")])
    with pytest.raises(ValueError) as info:
        load_dataset_pairs("helpsteer2_preference", path=path)
    assert str(info.value) == f"{path} row 5 (1-based line): preference_strength is 0 (a tie): no preference"
    loaded = load_dataset_pairs("helpsteer2_preference", path=path, on_error="skip")
    assert [(p.chosen, p.strength) for p in loaded] == [("One", 3), ("One", 1), ("Two", 2), ("Two", 3), ("Two", 3)]
    assert all(p.rejected == ("Two" if p.chosen == "One" else "One") for p in loaded)
    assert [p.meta["preference_strength"] for p in loaded] == [-3, -1, 2, 3, 5]
    assert loaded[0].source == "helpsteer2/preference" and loaded[0].question == "Write a haiku."
    assert len(loaded.skipped) == 2 and "row 7 (1-based line)" in loaded.skipped[1]
    val = load_dataset_pairs("helpsteer2_preference", path=path, row_split="val")
    assert [p.meta["row"] for p in val] == [4]


def test_skywork_preference(tmp_path: Path) -> None:
    def msg(role: str, content: Any) -> dict[str, Any]:
        return {"role": role, "content": content}

    user = [msg("user", "What is 2+2?")]
    rows = [
        {"chosen": user + [msg("assistant", "4")], "rejected": user + [msg("assistant", "5")], "source": "x"},
        {
            "chosen": [msg("user", "Hi"), msg("assistant", "Hello"), msg("user", "2+2?"), msg("assistant", "4")],
            "rejected": [msg("user", "Hi"), msg("assistant", "Hello"), msg("user", "2+2?"), msg("assistant", "22")],
        },
        {"chosen": [msg("assistant", "4")], "rejected": [msg("assistant", "5")]},  # no prompt
        {"chosen": user + [msg("assistant", "4")], "rejected": [msg("user", "Other?"), msg("assistant", "5")]},
        {"chosen": user + [msg("assistant", "4")], "rejected": user},  # rejected ends with the user
        {"chosen": user + [msg("assistant", "4")], "rejected": user + [msg("assistant", None)]},
        {"chosen": "4", "rejected": user + [msg("assistant", "5")]},
        {"chosen": user + [msg("assistant", "4")], "rejected": user + [msg("assistant", "4")]},
    ]
    path = write_jsonl(tmp_path / "skywork-80k.jsonl", rows)
    with pytest.raises(ValueError) as info:
        load_dataset_pairs("skywork_preference", path=path)
    assert str(info.value) == f"{path} row 3 (1-based line): chosen and rejected share no conversation prefix"
    loaded = load_dataset_pairs("skywork_preference", path=path, on_error="skip")
    assert [(p.question, p.chosen, p.rejected) for p in loaded] == [
        ("What is 2+2?", "4", "5"),
        ("User: Hi\n\nAssistant: Hello\n\nUser: 2+2?", "4", "22"),
    ]
    assert [s.split(": ", 1)[1] for s in loaded.skipped] == [
        "chosen and rejected share no conversation prefix",
        "chosen and rejected differ before their final assistant message",
        "the last message of rejected is from 'user', not 'assistant'",
        "rejected[1] is not a message with string 'role' and 'content'",
        "field 'chosen' must be a non-empty list of messages",
        "chosen and rejected responses are identical",
    ]
    assert loaded[0].source == "skywork/skywork-80k" and loaded[0].strength is None


# --------------------------------------------------------------------------- bytes that are not UTF-8


def llmbar_line(i: int, text: str = "A") -> bytes:
    return json.dumps({"input": f"Q{i}", "output_1": text, "output_2": "B", "label": 1}).encode()


BAD_LINE = b'{"input": "Q\xff", "output_1": "A", "output_2": "B", "label": 1}'  # 0xff: never valid UTF-8
BAD_AT = BAD_LINE.index(b"\xff")


def write_bytes(path: Path, data: bytes) -> Path:
    if path.name.endswith(".gz"):
        with gzip.open(path, "wb") as f:
            f.write(data)
    else:
        path.write_bytes(data)
    return path


@pytest.mark.parametrize("name", ["bad.jsonl", "bad.jsonl.gz", "bad.json", "bad.json.gz"])
def test_json_lines_row_with_invalid_utf8_is_a_malformed_row(tmp_path: Path, name: str) -> None:
    # a .json file holding JSON lines (as `datasets` writes them) is read line by line too
    path = write_bytes(tmp_path / name, b"\n".join([llmbar_line(1), BAD_LINE, llmbar_line(3, "C"), b""]))
    message = f"{path} row 2 (1-based line): not valid UTF-8 (byte 0xff at position {BAD_AT})"
    with pytest.raises(ValueError) as info:
        load_dataset_pairs("llmbar", path=path)
    assert str(info.value) == message and not isinstance(info.value, UnicodeDecodeError)
    loaded = load_dataset_pairs("llmbar", path=path, on_error="skip")
    assert [(p.meta["row"], p.question, p.chosen) for p in loaded] == [(1, "Q1", "A"), (3, "Q3", "C")]
    assert loaded.skipped == [message]
    assert len(load_dataset_pairs("llmbar", path=path, limit=1)) == 1  # the bad row is never reached


def test_invalid_utf8_in_a_truncated_multibyte_character(tmp_path: Path) -> None:
    good = "é".encode()  # 0xc3 0xa9: cut after its first byte, then a plain character
    line = b'{"input": "Q", "output_1": "' + good[:1] + b'x", "output_2": "B", "label": 1}'
    path = write_bytes(tmp_path / "cut.jsonl", llmbar_line(1) + b"\r\n" + line + b"\r\n")
    loaded = load_dataset_pairs("llmbar", path=path, on_error="skip")
    assert len(loaded) == 1
    assert loaded.skipped == [f"{path} row 2 (1-based line): not valid UTF-8 (byte 0xc3 at position {line.index(good[:1])})"]


@pytest.mark.parametrize("name", ["list.json", "list.json.gz"])
def test_json_list_with_invalid_utf8_fails_as_a_whole_file(tmp_path: Path, name: str) -> None:
    text = b"[\n" + llmbar_line(0) + b",\n" + BAD_LINE + b"\n]\n"
    path = write_bytes(tmp_path / name, text)
    offset = text.index(b"\xff")
    where = "the decompressed text" if name.endswith(".gz") else "the file"
    for on_error in ("raise", "skip"):
        with pytest.raises(ValueError) as info:
            load_dataset_pairs("llmbar", path=path, on_error=on_error)
        message = str(info.value)
        assert message.startswith(f"{path}: not valid UTF-8 (byte 0xff at byte offset {offset} of {where}, line 3); ")
        assert "no row can be skipped" in message and "\n" not in message
        assert not isinstance(info.value, UnicodeDecodeError)


def test_parquet_row_with_invalid_utf8_is_a_malformed_row(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    # pyarrow checks UTF-8 when building a string array from Python, so build the bad one from raw buffers
    values = [b"Q0", b"Q\xff1", b"Q2"]
    offsets = [0]
    for v in values:
        offsets.append(offsets[-1] + len(v))
    inputs = pa.Array.from_buffers(pa.string(), 3, [None, pa.py_buffer(pa.array(offsets, pa.int32()).buffers()[1]),
                                                     pa.py_buffer(b"".join(values))])
    table = pa.table({"input": inputs, "output_1": ["A", "A", "C"], "output_2": ["B"] * 3, "label": [1, 1, 1]})
    path = tmp_path / "bad.parquet"
    pq.write_table(table, path)
    message = f"{path} row 1 (0-based index): not valid UTF-8 (byte 0xff at position 1 of field 'input')"
    with pytest.raises(ValueError) as info:
        load_dataset_pairs("llmbar", path=path)
    assert str(info.value) == message
    loaded = load_dataset_pairs("llmbar", path=path, on_error="skip")
    assert [(p.question, p.chosen) for p in loaded] == [("Q0", "A"), ("Q2", "C")]
    assert loaded.skipped == [message]


def test_read_rows_reports_invalid_utf8_to_any_builder(tmp_path: Path) -> None:
    # read_rows is what the benchmark loaders use
    path = write_bytes(tmp_path / "bench.jsonl", b"\n".join([b'{"x": 1}', b'{"x": "\xfe"}', b'{"x": 3}']))

    def build(src: str, number: int, record: dict[str, Any]) -> tuple[str, int]:
        if not isinstance(record.get("x"), int):
            raise MalformedRow("x is not an int")
        return src, record["x"]

    kwargs: dict[str, Any] = dict(dataset="bench", split="test", limit=None, source=None, hub_kwargs=None)
    with pytest.raises(ValueError, match=r"^.*bench\.jsonl row 2 \(1-based line\): not valid UTF-8 \(byte 0xfe at"):
        read_rows(path, build, on_error="raise", **kwargs)
    built, skipped = read_rows(path, build, on_error="skip", **kwargs)
    assert built == [("bench/bench", 1), ("bench/bench", 3)]
    assert skipped == [f"{path} row 2 (1-based line): not valid UTF-8 (byte 0xfe at position 7)"]


def test_benchmark_loader_reports_invalid_utf8(tmp_path: Path) -> None:
    from judge_rl.config import BenchmarkConfig
    from judge_rl.evaluation.benchmarks import get_benchmark

    path = write_bytes(tmp_path / "natural.jsonl", b"\n".join([llmbar_line(0), BAD_LINE, llmbar_line(2, "C")]))
    message = f"{path} row 2 (1-based line): not valid UTF-8 (byte 0xff at position {BAD_AT})"
    with pytest.raises(ValueError) as info:
        get_benchmark("llmbar").load(BenchmarkConfig(name="llmbar", kind="llmbar", path=str(path)))
    assert str(info.value) == message
    loaded = get_benchmark("llmbar").load(BenchmarkConfig(name="llmbar", kind="llmbar", path=str(path), on_error="skip"))
    assert loaded.skipped == [message] and len(loaded.units) == 2


# --------------------------------------------------------------------------- checking loader kwargs from a config


SYNTHETIC_ARGS = "its arguments: n, seed, split, families, limit, on_error, reference"


def test_check_loader_kwargs_accepts_a_valid_call() -> None:
    check_loader_kwargs("synthetic", {"n": 4, "seed": 1, "limit": 2}, "data.eval")
    check_loader_kwargs("llmbar", {"path": "x.json", "on_error": "skip"}, "data.train")


def test_check_loader_kwargs_names_a_misspelt_argument() -> None:
    with pytest.raises(ValueError) as info:
        check_loader_kwargs("synthetic", {"n": 4, "limt": 2}, "data.eval")
    assert str(info.value) == f"data.eval.kwargs.limt: loader 'synthetic' has no argument 'limt'; {SYNTHETIC_ARGS}"
    with pytest.raises(ValueError) as info:
        check_loader_kwargs("synthetic", {"n": 4, "limt": 2, "sed": 1}, "data.eval")
    assert str(info.value) == f"data.eval.kwargs: loader 'synthetic' has no arguments 'limt', 'sed'; {SYNTHETIC_ARGS}"


def test_check_loader_kwargs_names_missing_required_arguments() -> None:
    with pytest.raises(ValueError) as info:
        check_loader_kwargs("synthetic", {"seed": 1}, "data.train")
    assert str(info.value) == f"data.train.kwargs: loader 'synthetic' is missing required argument 'n'; {SYNTHETIC_ARGS}"
    with pytest.raises(ValueError, match=r"^data\.eval\.kwargs: loader 'llmbar' is missing required argument 'path'; "
                                         r"its arguments: path, split, limit, on_error, source, hub_kwargs$"):
        check_loader_kwargs("llmbar", {}, "data.eval")


def test_check_loader_kwargs_names_an_unknown_loader() -> None:
    with pytest.raises(ValueError) as info:
        check_loader_kwargs("llm_bar", {"path": "x.json"}, "data.eval")
    assert str(info.value) == f"data.eval.loader: unknown loader 'llm_bar'; known loaders: {', '.join(DATASETS.names())}"
    with pytest.raises(ValueError, match=r"^data\.eval\.kwargs must be a mapping"):
        check_loader_kwargs("synthetic", None, "data.eval")  # type: ignore[arg-type]


def test_check_loader_kwargs_matches_what_the_loader_accepts() -> None:
    # whatever the check lets through, the loader takes without a TypeError, and the other way round
    for kwargs in ({"n": 3}, {"n": 3, "families": None}, {"n": 3, "limt": 1}, {"seed": 1}):
        try:
            check_loader_kwargs("synthetic", kwargs, "data.eval")
        except ValueError:
            with pytest.raises(TypeError):
                load_dataset_pairs("synthetic", **kwargs)
        else:
            load_dataset_pairs("synthetic", **kwargs)
