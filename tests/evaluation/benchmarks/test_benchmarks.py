"""Every benchmark end to end on tiny hand-made files in its published format: rows -> tasks -> a
scripted judge's raw text -> the real parsers -> records -> the authors' scores, computed by hand.

The scripted judge is a server whose verdicts follow a rule read from the question (always right,
always "[[A]]", unreadable, longer-is-better, ...), so that every official formula can be checked
against a number worked out by hand; the model-driven path is covered by the harness and app tests.
"""

from __future__ import annotations

import gzip
import json
import math
import re

import pytest

from judge_rl.config import BenchmarkConfig
from judge_rl.evaluation.benchmarks import get_benchmark
from judge_rl.servers import Completion, stable_hash
from judge_rl.evaluation.harness import evaluate_benchmark
from judge_rl.prompts import get_prompt

PAIRWISE = get_prompt("rewardbench_pairwise")
_ANSWER = re.compile(r"\[The Start of Assistant ([A-D])'s Answer\]\n(.*?)\n\[The End of", re.S)


class ScriptedJudge:
    """Answers like a judge following the rule named in the question ("rule=<name>")."""

    identity = "scripted"

    def __init__(self):
        self.requests = 0

    def request_key(self, messages, max_new_tokens):
        return stable_hash({"m": messages, "n": max_new_tokens})

    def complete(self, batch, *, max_new_tokens):
        self.requests += len(batch)
        return [Completion(self.answer(m[-1]["content"]), None, True) for m in batch]

    @staticmethod
    def answer(user: str) -> str:
        rule = re.search(r"rule=(\w+)", user).group(1)
        if "[Response]" in user:  # a rating prompt: "rate=N" in the answer
            response = user.split("[Response]\n", 1)[1]
            rating = re.search(r"rate=(\d+)", response).group(1)
            return f"Fine. {rating}" if rule != "garbage" else "no idea"
        answers = dict(_ANSWER.findall(user))
        if rule == "garbage":
            return "I cannot decide."
        if rule == "always_a":
            return "[[A]]"
        if rule == "wrong":
            return next(f"[[{k}]]" for k, v in answers.items() if "BAD" in v)
        if rule == "longer":
            best = max(answers, key=lambda k: (len(answers[k]), -ord(k)))  # equal length: the first shown
            return f"[[{best}]]"
        return next(f"[[{k}]]" for k, v in answers.items() if "GOOD" in v)  # rule=right


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def run(tmp_path, kind, path, prompt=PAIRWISE, **spec):
    server = ScriptedJudge()
    cfg = BenchmarkConfig(name=kind, kind=kind, path=str(path), **spec)
    summary = evaluate_benchmark(get_benchmark(kind), cfg, server, prompt, tmp_path / "out", max_new_tokens=16)
    return summary, server


# ----------------------------------------------------------------------------- RewardBench v1


def rb_row(i, subset, rule):
    return {"id": i, "subset": subset, "prompt": f"Q{i} rule={rule}", "chosen": f"GOOD {i}", "rejected": f"BAD {i}",
            "chosen_model": "m1", "rejected_model": "m2"}


def test_rewardbench_sections_from_judge_outputs(tmp_path):
    path = write_jsonl(tmp_path / "filtered.jsonl", [
        rb_row(0, "alpacaeval-easy", "right"),
        rb_row(1, "alpacaeval-easy", "right"),
        rb_row(2, "llmbar-natural", "always_a"),  # right in one order, wrong in the other: 0.5
        rb_row(3, "math-prm", "garbage"),  # unreadable: 0.5 ("effectively a tie")
        rb_row(4, "hep-python", "wrong"),
    ])
    summary, server = run(tmp_path, "rewardbench", path)
    off = summary["official"]
    assert off["subsets"] == {"alpacaeval-easy": 1.0, "llmbar-natural": 0.5, "math-prm": 0.5, "hep-python": 0.0}
    assert off["sections"]["Chat"] == 1.0 and off["sections"]["Chat Hard"] == 0.5
    assert off["sections"]["Reasoning"] == pytest.approx(984 * 0.5 / (984 + 164))  # math-prm weighs 984
    assert off["missing_sections"] == ["Safety"]
    assert off["overall"] == pytest.approx((1.0 + 0.5 + 984 * 0.5 / 1148) / 3)
    # harness diagnostics per subset, both orders
    llmbar = summary["harness"]["by_subset"]["llmbar-natural"]
    assert llmbar["accuracy_a"] == 1.0 and llmbar["accuracy_b"] == 0.0 and llmbar["a_preference_rate"] == 1.0
    assert llmbar["position_consistency"] == 0.0
    assert summary["harness"]["by_subset"]["math-prm"]["parse_failure_rate"] == 1.0
    assert summary["parse_failure_reasons"] == {"no [[X]] verdict": 2}
    assert server.requests == 10 and summary["counts"]["items"] == 10


def test_rewardbench_subset_filter_and_malformed_row_named(tmp_path):
    rows = [rb_row(0, "alpacaeval-easy", "right"), rb_row(1, "hep-go", "right")]
    bad = dict(rb_row(2, "hep-go", "right"))
    del bad["chosen"]
    path = write_jsonl(tmp_path / "rb.jsonl", [*rows, bad])
    with pytest.raises(ValueError, match=r"rb\.jsonl row 3 \(1-based line\): missing field 'chosen'"):
        run(tmp_path, "rewardbench", path)
    summary, _ = run(tmp_path, "rewardbench", path, subsets=["alpacaeval-easy"])
    assert list(summary["official"]["subsets"]) == ["alpacaeval-easy"]
    summary, _ = run(tmp_path / "skip", "rewardbench", path, on_error="skip")
    assert summary["counts"]["skipped_rows"] == 1 and "row 3" in summary["skipped_rows"][0]


# ----------------------------------------------------------------------------- RM-Bench


def test_rmbench_matrix_orientation_with_a_length_biased_judge(tmp_path):
    # a judge that prefers the longer response: chosen style i beats rejected style j iff i > j; equal
    # lengths go to the first shown, i.e. right in one order only (0.5)
    styles = lambda tag: [f"{tag} rule=longer", f"{tag} rule=longer" + " x" * 10, f"{tag} rule=longer" + " x" * 20]
    rows = [
        {"id": 1, "prompt": "Q rule=longer", "chosen": styles("GOOD"), "rejected": styles("BADD"), "domain": "chat"},
        {"id": 2, "prompt": "Q rule=longer", "chosen": styles("GOOD"), "rejected": styles("BADD"), "domain": "safety-refuse"},
    ]
    path = tmp_path / "total_dataset.json"
    path.write_text(json.dumps(rows))
    summary, server = run(tmp_path, "rmbench", path)
    off = summary["official"]
    assert set(off["domains"]) == {"chat", "safety"}
    for d in off["domains"].values():
        assert d["matrix"] == [[0.5, 0.0, 0.0], [1.0, 0.5, 0.0], [1.0, 1.0, 0.5]]
    assert off["overall"]["hard_acc"] == 0.0  # upper right: plainer chosen vs fancier rejected
    assert off["overall"]["normal_acc"] == 0.5 and off["overall"]["easy_acc"] == 1.0
    # the two rows differ only in domain: their 18 judge requests are identical and sent once
    assert summary["counts"]["items"] == 2 * 9 * 2
    assert server.requests == 18 and summary["counts"]["deduplicated"] == 18


def test_rmbench_rejects_rows_without_three_styles(tmp_path):
    path = write_jsonl(tmp_path / "rm.jsonl", [{"id": 1, "prompt": "Q", "chosen": ["a", "b"], "rejected": ["c", "d", "e"], "domain": "math"}])
    with pytest.raises(ValueError, match="row 1 .*'chosen' must be a list of 3 strings"):
        run(tmp_path, "rmbench", path)


# ----------------------------------------------------------------------------- JudgeBench


def jb_row(i, label, source, rule):
    good, bad = f"GOOD {i}", f"BAD {i}"
    a, b = (good, bad) if label == "A>B" else (bad, good)
    return {"pair_id": f"p{i}", "original_id": str(i), "source": source, "question": f"Q{i} rule={rule}",
            "response_model": "gpt-4o", "response_A": a, "response_B": b, "label": label}


def test_judgebench_netting(tmp_path):
    path = write_jsonl(tmp_path / "gpt.jsonl", [
        jb_row(0, "A>B", "mmlu-pro-law", "right"),  # right twice: correct
        jb_row(1, "B>A", "mmlu-pro-law", "always_a"),  # right once, wrong once: nets to 0, not correct
        jb_row(2, "A>B", "livecodebench", "garbage"),  # no verdict twice: not correct
        jb_row(3, "B>A", "livebench-math", "right"),
    ])
    summary, _ = run(tmp_path, "judgebench", path)
    off = summary["official"]
    assert off["accuracy"] == 0.5 and off["knowledge"] == 0.5 and off["coding"] == 0.0 and off["math"] == 1.0
    assert set(summary["harness"]["by_subset"]) == {"knowledge", "coding", "math"}
    with pytest.raises(ValueError, match="label must be 'A>B' or 'B>A'"):
        run(tmp_path / "bad", "judgebench", write_jsonl(tmp_path / "bad.jsonl", [{**jb_row(0, "A>B", "x", "right"), "label": "A=B"}]))


# ----------------------------------------------------------------------------- PandaLM


def panda_row(i, annotators, rule):
    good, bad = f"GOOD {i}", f"BAD {i}"
    gold = max(set(annotators), key=lambda x: (annotators.count(x), -x))
    r1, r2 = (bad, good) if gold == 2 else (good, bad)
    if gold == 0:
        r1, r2 = f"same A {i}", f"same B {i}"
    return {"idx": str(i), "motivation_app": "x", "cmp_key": "k", "instruction": f"Do {i} rule={rule}", "input": "ctx",
            "response1": r1, "response2": r2, "annotator1": annotators[0], "annotator2": annotators[1], "annotator3": annotators[2]}


def test_pandalm_ties_and_macro_f1(tmp_path):
    path = tmp_path / "testset-v1.json"
    path.write_text(json.dumps([
        panda_row(0, [1, 1, 2], "right"),  # gold 1: predicted 1, 1
        panda_row(1, [2, 2, 0], "right"),  # gold 2: predicted 2, 2
        panda_row(2, [0, 0, 1], "garbage"),  # gold 0 (tie): unreadable predicts 0, 0 (as JudgeLRM)
        panda_row(3, [2, 1, 2], "always_a"),  # gold 2: response2 at (a) once -> 2, then response1 at (a) -> 1
    ]))
    summary, _ = run(tmp_path, "pandalm", path)
    off = summary["official"]
    # y_true 1 1 2 2 0 0 2 2 ; y_pred 1 1 2 2 0 0 2 1 -> 7/8
    assert off["accuracy"] == pytest.approx(7 / 8)
    # class 0: P1 R1; class 1: TP2 FP1 -> P 2/3, R 1; class 2: TP3 FN1 -> P 1, R 3/4
    assert off["precision"] == pytest.approx((1 + 2 / 3 + 1) / 3)
    assert off["recall"] == pytest.approx((1 + 1 + 3 / 4) / 3)
    f1_1, f1_2 = 2 * (2 / 3) / (2 / 3 + 1), 2 * 0.75 / 1.75
    assert off["f1"] == pytest.approx((1 + f1_1 + f1_2) / 3)
    # the tie row stays out of the pairwise diagnostics; the question joins instruction and input
    assert summary["harness"]["overall"]["n_pairs"] == 3


# ----------------------------------------------------------------------------- JudgeLM


def judgelm_row(i, scores, rule, *, with_score=True):
    """A row of JudgeLM's published format (judgelm_preprocess.py fields), the better answer marked GOOD."""
    s1, s2 = scores
    a1, a2 = ("GOOD", "BAD") if s1 > s2 else ("BAD", "GOOD") if s2 > s1 else ("same", "same")
    row = {"question_id": i, "question_body": f"Q{i} rule={rule}", "answer1_body": f"{a1} one {i}",
           "answer2_body": f"{a2} two {i}", "answer1_model_id": "m1", "answer2_model_id": "m2",
           "answer1_metadata": {"decoding_method": "top_p_sampling"}, "answer2_metadata": {"decoding_method": "top_p_sampling"}}
    if with_score:
        row["score"] = [float(s1), float(s2)]
    else:  # judgelm_val_5k.jsonl: generation statistics under `score`, the judgment in another file
        row["score"] = [{"logprobs": -1.0, "rougeL": 0.1}, {"logprobs": -2.0, "rougeL": 0.2}]
    return row


def test_judgelm_agreement_macro_prf_and_consistency(tmp_path):
    path = write_jsonl(tmp_path / "judgelm_train_format.jsonl", [
        judgelm_row(0, (8, 3), "right"),     # gold 1: predicted 1, 1
        judgelm_row(1, (2, 9), "right"),     # gold 2: predicted 2, 2
        judgelm_row(2, (7, 7), "garbage"),   # gold tie: unreadable predicts a tie twice (JudgeLM's -1 -1)
        judgelm_row(3, (4, 6), "always_a"),  # gold 2: answer 2 at (a) -> 2, then answer 1 at (a) -> 1
    ])
    summary, _ = run(tmp_path, "judgelm", path)
    off = summary["official"]
    # y_true 1 1 2 2 0 0 2 2 ; y_pred 1 1 2 2 0 0 2 1 -> agreement 7/8, as PandaLM's worked example
    assert off["agreement"] == pytest.approx(7 / 8)
    assert off["precision"] == pytest.approx((1 + 2 / 3 + 1) / 3)
    assert off["recall"] == pytest.approx((1 + 1 + 3 / 4) / 3)
    assert off["f1"] == pytest.approx((1 + 2 * (2 / 3) / (2 / 3 + 1) + 2 * 0.75 / 1.75) / 3)
    # swap consistency: rows 0, 1, 2 name the same answer (or a tie) in both orders, row 3 does not
    assert off["consistency"] == pytest.approx(3 / 4)
    assert summary["harness"]["overall"]["n_pairs"] == 3  # the tie row stays out of the pairwise diagnostics


def test_judgelm_labels_join_by_question_id_and_bad_rows_are_named(tmp_path):
    val = write_jsonl(tmp_path / "judgelm_val_5k.jsonl",
                      [judgelm_row(10, (8, 3), "right", with_score=False), judgelm_row(11, (1, 9), "right", with_score=False)])
    # judgelm_val_5k_gpt4.jsonl: the reference scores on the first line of `text`; rows in another order
    gpt4 = write_jsonl(tmp_path / "judgelm_val_5k_gpt4.jsonl", [
        {"review_id": "r11", "question_id": 11, "text": "1, 9\nAssistant 2 is better.", "score": [1.0, 9.0]},
        {"review_id": "r10", "question_id": 10, "text": "8 3\nAssistant 1 is better.", "score": [8.0, 3.0]},
    ])
    summary, _ = run(tmp_path, "judgelm", val, options={"labels": str(gpt4)})
    assert summary["official"]["agreement"] == 1.0 and summary["official"]["n_judgments"] == 4
    with pytest.raises(ValueError, match=r"judgelm_val_5k.jsonl row 1 .*'score' holds generation statistics"):
        run(tmp_path, "judgelm", val)
    missing = write_jsonl(tmp_path / "gpt4_partial.jsonl", [{"question_id": 10, "text": "8 3"}])
    with pytest.raises(ValueError, match="row 2 .*question_id 11 has no row in benchmark.options.labels"):
        run(tmp_path, "judgelm", val, options={"labels": str(missing)})
    # a reference that did not parse (-1 -1) is dropped, as JudgeLM drops it
    unparsed = write_jsonl(tmp_path / "gpt4_unparsed.jsonl",
                           [{"question_id": 10, "text": "8 3"}, {"question_id": 11, "text": "no scores here"}])
    summary, _ = run(tmp_path, "judgelm", val, options={"labels": str(unparsed)}, on_error="skip")
    assert summary["counts"]["skipped_rows"] == 1 and summary["official"]["n_judgments"] == 2


# ----------------------------------------------------------------------------- RewardBench 2


def rb2_row(row_id, subset, rule, n_correct=1, n_rejected=3, ratings=None):
    ratings = ratings or [8] * n_correct + [3] * n_rejected
    answers = [f"{'GOOD' if k < n_correct else 'BAD'} {row_id} {k} rate={r}" for k, r in enumerate(ratings)]
    return {"id": row_id, "prompt": f"Q {row_id} rule={rule}", "chosen": answers[:n_correct], "rejected": answers[n_correct:],
            "num_correct": n_correct, "num_incorrect": n_rejected, "total_completions": n_correct + n_rejected,
            "models": [], "subset": subset, "additional_metadata": {}}


def test_rewardbench2_choice_ratings_and_ties(tmp_path):
    path = write_jsonl(tmp_path / "rb2.jsonl", [
        rb2_row("1", "Focus", "right"),
        rb2_row("2", "Focus", "garbage"),  # no verdict: 0.25
        rb2_row("3", "Math", "wrong"),
        # Ties (always rated): ref has 1 correct, tied 2 correct, sharing prompt id 7
        rb2_row("ref:7", "Ties", "right", 1, 2, ratings=[9, 2, 2]),
        rb2_row("tied:7", "Ties", "right", 2, 1, ratings=[9, 8, 2]),
    ])
    summary, server = run(tmp_path, "rewardbench2", path, options={"mode": "choice", "seed": 3})
    off = summary["official"]
    assert off["subsets"]["Focus"] == pytest.approx((1 + 0.25) / 2) and off["subsets"]["Math"] == 0.0
    # ref: accurate, ci 7; tied: accurate, diff 1, ci 6 -> 0.3 + 0.3 + 0.2 + 0.2 + 0.01 tanh(6/1 - 1)
    assert off["ties"]["score"] == pytest.approx(1.0 + 0.01 * math.tanh(5))
    assert off["overall"] == pytest.approx((0.625 + 0.0 + off["ties"]["score"]) / 3)
    assert off["missing_subsets"] == ["Factuality", "Precise IF", "Safety"]
    assert server.requests == 3 + 3 + 3  # one 4-way request per non-Ties row, one rating per Ties answer
    # the correct answer sits in a seeded random slot and is mapped back
    recs = [json.loads(x) for x in (tmp_path / "out" / "judgments.jsonl").read_text().splitlines()]
    focus = next(r for r in recs if r["unit_id"] == "1")
    assert focus["picked_index"] == 0 and focus["pick"] in "abcd"

    # ratings mode: best-of-4 with 1/k for a tie at the top
    path2 = write_jsonl(tmp_path / "rb2r.jsonl", [rb2_row("1", "Focus", "right", ratings=[8, 8, 3, 3]),
                                                  rb2_row("2", "Math", "right", ratings=[9, 3, 3, 3])])
    summary2, _ = run(tmp_path / "r", "rewardbench2", path2, options={"mode": "ratings"})
    assert summary2["official"]["subsets"] == {"Focus": 0.5, "Math": 1.0}
    with pytest.raises(ValueError, match="options.mode='vote'"):
        run(tmp_path / "x", "rewardbench2", path2, options={"mode": "vote"})


def test_rewardbench2_bad_ties_id_is_reported(tmp_path):
    path = write_jsonl(tmp_path / "rb2.jsonl", [rb2_row("7", "Ties", "right", 1, 2)])
    with pytest.raises(ValueError, match="row 1 .*Ties id must be '<ref|tied>:<int>'"):
        run(tmp_path, "rewardbench2", path)


# ----------------------------------------------------------------------------- generic files


def test_preference_file_with_subsets_and_gzip(tmp_path):
    rows = [{"prompt": f"Q{i} rule={'right' if i % 2 else 'wrong'}", "chosen": f"GOOD {i}", "rejected": f"BAD {i}",
             "subset": "even" if i % 2 == 0 else "odd"} for i in range(4)]
    path = tmp_path / "prefs.jsonl.gz"
    with gzip.open(path, "wt") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    summary, _ = run(tmp_path, "preference", path)
    assert summary["official"]["by_subset"] == {"even": 0.0, "odd": 1.0}
    assert summary["official"]["accuracy"] == 0.5


def test_pointwise_judge_on_a_pairwise_benchmark(tmp_path):
    # each response rated alone; the pair is right when the chosen one is rated strictly higher
    rows = [{"prompt": "Q rule=right", "chosen": "GOOD rate=8", "rejected": "BAD rate=3"},
            {"prompt": "Q rule=right", "chosen": "GOOD rate=5", "rejected": "BAD rate=5"}]
    summary, _ = run(tmp_path, "preference", write_jsonl(tmp_path / "p.jsonl", rows), prompt=get_prompt("rb2_rating"))
    assert summary["official"]["accuracy"] == 0.5
    assert summary["harness"]["overall"]["pairwise_tie_rate"] == 0.5


def test_choice_prompt_refused_on_pairs(tmp_path):
    rows = [{"prompt": "Q", "chosen": "a", "rejected": "b"}]
    with pytest.raises(ValueError, match="judges pairs: prompt 'rb2_choice' is a choice prompt"):
        run(tmp_path, "preference", write_jsonl(tmp_path / "p.jsonl", rows), prompt=get_prompt("rb2_choice"))


# ----------------------------------------------------------------------------- the real files


@pytest.mark.parametrize(
    "file,kind,pairs,skipped",
    [("llmbar/natural.json", "llmbar", 100, 0), ("llmbar/mt-bench-human.json", "llmbar", 200, 0),
     ("llmbar/faireval.json", "llmbar", 66, 0), ("llmbar/llmeval2.json", "llmbar", 199, 1),
     ("hh-rlhf/harmless-base-test.jsonl.gz", "hh_rlhf", 2307, 5)],
)
def test_real_files_load(shared_data, file, kind, pairs, skipped):
    cfg = BenchmarkConfig(name=kind, kind=kind, path=str(shared_data / file), on_error="skip")
    loaded = get_benchmark(kind).load(cfg)
    assert len(loaded.units) == pairs and len(loaded.skipped) == skipped
    tasks = get_benchmark(kind).tasks(loaded.units, PAIRWISE, cfg)
    assert len(tasks) == 2 * pairs and len({t.item_id for t in tasks}) == 2 * pairs


# ----------------------------------------------------------------------------- server failures


class FlakyJudge(ScriptedJudge):
    """The scripted judge behind a server that gets no answer for questions with rule=down."""

    def complete(self, batch, *, max_new_tokens):
        self.requests += len(batch)
        return [Completion.failure("connection error (ConnectError): refused") if "rule=down" in m[-1]["content"]
                else Completion(self.answer(m[-1]["content"]), None, True) for m in batch]


def flaky_run(tmp_path, kind, path, max_rate, prompt=PAIRWISE, **spec):
    cfg = BenchmarkConfig(name=kind, kind=kind, path=str(path), **spec)
    return evaluate_benchmark(get_benchmark(kind), cfg, FlakyJudge(), prompt, tmp_path, max_new_tokens=16,
                              max_server_failure_rate=max_rate)


def test_a_server_failure_never_takes_rewardbenchs_tie_credit(tmp_path):
    """On today's main an unanswered request scored 0.5 ("tie or error") and the subset read 0.833."""
    path = write_jsonl(tmp_path / "rb.jsonl", [
        rb_row(0, "alpacaeval-easy", "right"),
        rb_row(1, "alpacaeval-easy", "right"),
        rb_row(2, "alpacaeval-easy", "down"),
        rb_row(3, "llmbar-natural", "garbage"),  # a real answer that does not parse keeps the 0.5 rule
    ])
    withheld = flaky_run(tmp_path / "strict", "rewardbench", path, max_rate=0.0)
    assert withheld["official"] is None and withheld["harness"]["overall"] == {}
    scoring = withheld["scoring"]
    assert scoring["status"] == "withheld" and scoring["units_without_answer"] == 1 and scoring["units"] == 4
    assert "1 of 4 units got no answer" in scoring["reason"]
    assert withheld["counts"]["server_failures"] == 2 and withheld["parse_failure_reasons"] == {"no [[X]] verdict": 2}
    saved = json.loads((tmp_path / "strict" / "summary.json").read_text())
    assert saved["official"] is None and saved["scoring"]["status"] == "withheld"

    partial = flaky_run(tmp_path / "lenient", "rewardbench", path, max_rate=0.25)
    assert partial["scoring"]["status"] == "answered_only" and partial["scoring"]["units_scored"] == 3
    assert partial["official"]["subsets"] == {"alpacaeval-easy": 1.0, "llmbar-natural": 0.5}
    assert partial["harness"]["overall"]["n_pairs"] == 3

    complete = run(tmp_path / "all", "rewardbench", write_jsonl(tmp_path / "ok.jsonl", [rb_row(0, "alpacaeval-easy", "garbage")]))[0]
    assert complete["scoring"]["status"] == "complete" and complete["official"]["subsets"] == {"alpacaeval-easy": 0.5}


def test_an_unanswered_rewardbench2_choice_is_not_scored_as_unreadable(tmp_path):
    def row(i, rule):
        return {"id": str(i), "subset": "Factuality", "prompt": f"Q{i} rule={rule}", "chosen": [f"GOOD {i}"],
                "rejected": [f"BAD {i}a", f"BAD {i}b", f"BAD {i}c"], "num_correct": 1}

    path = write_jsonl(tmp_path / "rb2.jsonl", [row(0, "right"), row(1, "down")])
    summary = flaky_run(tmp_path / "out", "rewardbench2", path, max_rate=0.5, options={"mode": "choice"})
    assert summary["scoring"]["units_scored"] == 1
    assert summary["official"]["subsets"]["Factuality"] == 1.0  # not (1 + 0.25) / 2
