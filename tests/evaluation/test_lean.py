"""The verdict-likelihood probe (judge_rl/evaluation/lean.py): the outputs it scores, the log-likelihoods of a real
(tiny) model, and the metrics, including a lean that hides what the judge knows."""

from __future__ import annotations

import pytest
import torch

from judge_rl.config import ModelConfig
from judge_rl.data.pairs import JudgeItem, PreferencePair
from judge_rl.evaluation.lean import (candidate_outputs, item_margins, log_likelihood_margin, output_log_likelihoods,
                                      summarize)
from judge_rl.models.loading import load_model, load_tokenizer
from judge_rl.prompts import get_prompt
from judge_rl.rollouts.generation import encode_chat

from conftest import CACHE_DIR

TINY = ModelConfig(name="tiny-random", source="tiny_random", gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf")
PAIRS = [PreferencePair(pair_id=f"p{i}", source="test", question=f"Question {i}?", chosen=f"A good answer {i}.",
                        rejected=f"No idea, {i}.") for i in range(2)]  # fmt: skip


@pytest.mark.parametrize("name", ["strength", "binary"])
def test_the_two_outputs_are_the_label_trace_naming_each_position_in_the_prompts_verdict_line(name):
    prompt = get_prompt(name)
    item = JudgeItem(PAIRS[0], "b")  # chosen shown at (b)
    outputs = candidate_outputs(item, prompt)
    for winner, text in outputs.items():
        judgment = prompt.parse(text)
        assert judgment.ok and judgment.winner == winner, (text, judgment)
        assert '"No idea, 0."' in text and '"A good answer 0."' in text  # both shown responses quoted, in order
        assert text.index("No idea") < text.index("A good answer")
    # the same thinking up to the position it names
    heads = {w: text.split(" serves the request better.")[0] for w, text in outputs.items()}
    assert heads["a"].removesuffix("Response (a)") == heads["b"].removesuffix("Response (b)") != heads["a"]


def test_the_log_likelihoods_of_a_padded_batch_are_each_outputs_own():
    tokenizer = load_tokenizer(TINY, CACHE_DIR)
    torch.manual_seed(0)
    model = load_model(TINY, CACHE_DIR, torch.device("cpu")).eval()
    prompt = get_prompt("strength")
    item = JudgeItem(PAIRS[0], "a")
    ids = encode_chat(tokenizer, prompt.messages(item))
    outputs = [candidate_outputs(item, prompt)["a"], "<think>\nshort\n</think>\n"]  # unequal lengths: one is padded
    together = output_log_likelihoods(model, tokenizer, ids, outputs)
    alone = [output_log_likelihoods(model, tokenizer, ids, [o])[0] for o in outputs]
    assert together == pytest.approx(alone, abs=1e-3)
    with torch.no_grad():  # the definition: the output's tokens' log-probs, one at a time
        out_ids = tokenizer(outputs[1], add_special_tokens=False)["input_ids"]
        logits = model(input_ids=torch.tensor([ids + out_ids])).logits[0].float().log_softmax(-1)
        by_hand = sum(float(logits[len(ids) - 1 + k, t]) for k, t in enumerate(out_ids))
    assert alone[1] == pytest.approx(by_hand, abs=1e-3) and alone[1] < 0
    # the margin computed once over the shared part is the difference of the two full log-likelihoods
    pair_outputs = candidate_outputs(item, prompt)
    full = output_log_likelihoods(model, tokenizer, ids, [pair_outputs["a"], pair_outputs["b"]])
    assert log_likelihood_margin(model, tokenizer, ids, pair_outputs["a"], pair_outputs["b"]) == pytest.approx(
        full[0] - full[1], abs=1e-3)
    assert log_likelihood_margin(model, tokenizer, ids, outputs[0], outputs[1]) == pytest.approx(
        alone[0] - alone[1], abs=1e-3)  # outputs that differ from their second token on, one longer
    margins = item_margins(model, tokenizer, prompt, PAIRS, lambda m: encode_chat(tokenizer, m))
    assert [(m["pair_id"], m["chosen_position"]) for m in margins] == [("p0", "a"), ("p0", "b"), ("p1", "a"), ("p1", "b")]
    summary = summarize(margins)
    assert summary.n_pairs == 2 and 0 < summary.p_a["mean"] < 1


def test_a_lean_to_one_position_is_measured_and_the_calibrated_verdict_sees_past_it():
    # a judge that always finds (a) likelier, by 3 nats when the better response is at (a) and 1 when it is at (b):
    # decoded, it names (a) every time (accuracy 0.5, consistent 0, A-preference 1); calibrated, it is right
    rows = [{"pair_id": f"p{i}", "chosen_position": pos, "margin_a": 3.0 if pos == "a" else 1.0}
            for i in range(10) for pos in ("a", "b")]  # fmt: skip
    s = summarize(rows)
    assert (s.n_pairs, s.accuracy["mean"], s.acc_at_a, s.acc_at_b) == (10, 0.5, 1.0, 0.0)
    assert s.consistent_accuracy["mean"] == 0.0 and s.a_preference["mean"] == 1.0
    assert s.p_a["mean"] == pytest.approx((1 / (1 + 2.718281828**-3) + 1 / (1 + 2.718281828**-1)) / 2)
    assert s.calibrated_accuracy == {**s.calibrated_accuracy, "mean": 1.0, "low": 1.0, "high": 1.0}
    # one that leans the same way and knows nothing (the same margin in both orders): calibrated, a tie, wrong
    flat = summarize([{**r, "margin_a": 2.0} for r in rows])
    assert flat.calibrated_accuracy["mean"] == 0.0 and flat.a_preference["mean"] == 1.0
    with pytest.raises(ValueError, match="pair p0 lacks an order"):
        summarize(rows[:1])
