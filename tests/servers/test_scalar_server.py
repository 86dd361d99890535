"""A Bradley-Terry judge behind the server interface: the `scalar` prompt's conversation, scored by a sequence
classifier, read back by the prompt; and the eval app scoring a trained BT model on a benchmark file."""

from __future__ import annotations

import json

import pytest
import torch
from hydra import compose, initialize_config_dir

from judge_rl.config import ModelConfig
from judge_rl.data.pairs import PointwiseItem, PreferencePair
from judge_rl.jobs.evaluate import run_eval
from judge_rl.models.loading import load_score_model, load_tokenizer, save_model
from judge_rl.prompts import get_prompt
from judge_rl.prompts.scalar import NOT_A_NUMBER
from judge_rl.servers.scalar import ScalarServer, scalar_ids

from conftest import CACHE_DIR, CONF_DIR

TINY = ModelConfig(name="tiny-random", source="tiny_random", gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf")


@pytest.fixture(scope="module")
def scorer():
    return load_score_model(TINY, CACHE_DIR, torch.device("cpu"), seed=0), load_tokenizer(TINY, CACHE_DIR)


def test_the_scalar_prompt_shows_question_reference_and_one_response():
    pair = PreferencePair("p1", "s", "What is 2+2?", "4", "5", meta={"reference": "4"})
    messages = get_prompt("scalar").messages(PointwiseItem(pair, "rejected", 0))
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert "What is 2+2?" in messages[0]["content"] and "[Reference Answer]\n4" in messages[0]["content"]
    assert messages[1]["content"] == "5"
    assert get_prompt("scalar").parse(" -1.250000 ").score == -1.25
    assert get_prompt("scalar").parse("nan").error == NOT_A_NUMBER and get_prompt("scalar").parse("x").error == NOT_A_NUMBER


def test_scores_do_not_depend_on_the_batch_they_were_padded_in(scorer):
    model, tok = scorer
    server = ScalarServer(model, tok, batch_size=4)
    convs = [[{"role": "user", "content": "Q" * (1 + 7 * i)}, {"role": "assistant", "content": "A" * (1 + 3 * i)}]
             for i in range(5)]
    together = [float(c.text) for c in server.complete(convs, max_new_tokens=1)]
    alone = [float(server.complete([c], max_new_tokens=1)[0].text) for c in convs]
    assert together == pytest.approx(alone, abs=1e-5)
    with torch.no_grad():  # the score is the classifier's output at the sequence's last token
        ids = torch.tensor([scalar_ids(tok, convs[2])])
        assert float(model(input_ids=ids).logits[0, 0]) == pytest.approx(together[2], abs=1e-5)
    # the key is the judge and the tokens, not the generation budget
    assert server.request_key(convs[0], 1) == server.request_key(convs[0], 512) != server.request_key(convs[1], 1)


def test_a_causal_lm_is_not_a_scalar_judge():
    from judge_rl.models.loading import load_model

    lm = load_model(TINY, CACHE_DIR, torch.device("cpu"), seed=0)
    lm.config.num_labels = 2
    with pytest.raises(ValueError, match="num_labels=1"):
        ScalarServer(lm, load_tokenizer(TINY, CACHE_DIR))


def compose_eval(overrides: list[str]):
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(config_name="evaluate", overrides=[f"cache_dir={CACHE_DIR}", *overrides])


def test_the_eval_app_scores_a_bt_model_on_a_benchmark_file(scorer, tmp_path):
    model, tok = scorer
    save_model(model, tok, tmp_path / "bt_model")
    rows = [{"prompt": f"Question {i}?", "chosen": f"Good answer {i}.", "rejected": f"Bad {i}."} for i in range(3)]
    path = tmp_path / "pref.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    base = ["model=tiny-random", "benchmark=preference", f"benchmark.path={path}", f"run_dir={tmp_path / 'run'}"]
    summary = run_eval(compose_eval([*base, "server=scalar", "judge.prompt=scalar", f"judge.checkpoint={tmp_path / 'bt_model'}"]))
    records = [json.loads(x) for x in (tmp_path / "run" / "judgments.jsonl").read_text().splitlines()]
    assert len(records) == 6 and all(isinstance(r["pred_score"], float) for r in records)
    by_pair: dict[str, dict] = {}
    for r in records:
        by_pair.setdefault(r["pair_id"], {})[r["which"]] = r["pred_score"]
    right = sum(p["chosen"] > p["rejected"] for p in by_pair.values()) / 3
    assert summary["harness"]["overall"]["pairwise_accuracy"] == pytest.approx(right)
    with pytest.raises(ValueError, match="server=scalar with judge.prompt=scalar"):
        run_eval(compose_eval([*base, "server=scalar", f"judge.checkpoint={tmp_path / 'bt_model'}"]))
    with pytest.raises(ValueError, match="needs judge.checkpoint"):
        run_eval(compose_eval([*base, "server=scalar", "judge.prompt=scalar"]))
