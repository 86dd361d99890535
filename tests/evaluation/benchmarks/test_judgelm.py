"""JudgeLM val: agreement, macro P/R/F1 and swap consistency end to end with a scripted judge; the reference
scores joined by question_id, bad rows named."""

from __future__ import annotations

import pytest

from benchmark_support import run, write_jsonl


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
