"""Pairs on the policy task (judge_rl/policy/tasks/pairs.py, the main job's `data=policy_task`): every pair is what it
claims by the real checkers and guard, its gold traces parse to its label in both orders, train and test share no
base task, the biased variant labels by length, and the loader and config reach them."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from judge_rl.data import load_dataset_pairs
from judge_rl.data.pairs import both_orders
from judge_rl.evaluation.ifeval.checkers import get_checker
from judge_rl.policy.tasks.prompts import generate_policy_prompts, task_split
from judge_rl.policy.tasks.guard import guard_failure
from judge_rl.policy.rewards.rule import rule_checks
from judge_rl.policy.tasks.pairs import (
    BODIES_PATH,
    PAIR_INSTRUCTION_IDS,
    comply,
    evidence,
    generate_task_pairs,
    load_bodies,
    violate,
)
from judge_rl.prompts import get_prompt
from conftest import compose_config


def true_score(pair, text: str) -> bool:
    m = pair.meta
    return all(rule_checks(m["instruction_id_list"], m["kwargs"], text)) and \
        guard_failure(text, m["task_id"], m["instruction_id_list"]) is None  # fmt: skip


def test_the_committed_bodies_are_the_policys_answers_that_pass_the_guard():
    bodies = load_bodies()
    assert len(bodies) >= 40 and sum(map(len, bodies.values())) >= 120
    for task_id, texts in bodies.items():
        assert all(guard_failure(b, task_id) is None for b in texts)
    assert {task_split(t) for t in bodies} == {"train", "test"}


@pytest.mark.parametrize("split", ["train", "test"])
def test_every_pair_is_what_it_claims(split):
    pairs = generate_task_pairs(60, seed=3, split=split, max_constraints=2)
    assert len(pairs) == 60 and len({p.pair_id for p in pairs}) == 60
    kinds = Counter(p.meta["kind"] for p in pairs)
    assert set(kinds) == {"miss", "off_topic", "loop"} and kinds["miss"] > kinds["loop"]
    prompt = get_prompt("strength")
    for p in pairs:
        assert task_split(p.meta["task_id"]) == split
        assert true_score(p, p.chosen) and not true_score(p, p.rejected)
        if p.meta["kind"] == "miss":  # a real answer that misses constraints: the checkers say which
            followed = rule_checks(p.meta["instruction_id_list"], p.meta["kwargs"], p.rejected)
            assert [i for i, f in enumerate(followed) if not f] == p.meta["missed"]
            assert p.strength == min(3, len(p.meta["missed"]) + 1)
        else:
            assert p.strength == 3 and all(rule_checks(p.meta["instruction_id_list"], p.meta["kwargs"], p.rejected))
        for item in both_orders([p]):  # the gold trace is a parseable judgment naming the chosen response
            judgment = prompt.parse(item.trace)
            assert (judgment.winner, judgment.strength) == (item.chosen_position, p.strength)
    assert generate_task_pairs(60, seed=3, split=split, max_constraints=2) == pairs  # deterministic
    assert generate_task_pairs(60, seed=4, split=split, max_constraints=2) != pairs


def test_the_gold_trace_quotes_what_decides_each_constraint():
    """Evidence is the shortest copy that decides a constraint (a word, a character, a sentence), cut where text cuts
    itself, so a judge's copy ends without counting."""
    assert evidence("detectable_content:postscript", "Body.\n\nP.S. More here.") == "last line starts with `P.S.`"
    assert evidence("startend:end_checker", "Body. Other.\nIt was fun. Until next time.") == "last sentence: `Until next time.`"
    assert evidence("startend:quotation", '"Hi there, all."') == 'first character `"`, last character `"`'
    assert evidence("punctuation:no_comma", "One two three") == "has no comma"
    assert evidence("punctuation:no_comma", "One two, three") == "has a comma: `two,`"
    assert evidence("detectable_format:title", "<<T>>\n\nBody. More.") == "first word: `<<T>>`"
    assert evidence("change_case:english_lowercase", "the sun. it Set.") == "has a capital letter: `Set.`"
    assert evidence("change_case:english_lowercase", "the sun. it set.") == "has no capital letter"
    [pair] = generate_task_pairs(1, seed=5, instruction_ids=["startend:end_checker"])
    trace = pair.traces["a"]
    # each quote is followed by its own finding, so the decision sits right after the copy it reads
    assert f"(a) {evidence('startend:end_checker', pair.chosen)} -> yes\n" in trace
    assert f"(b) {evidence('startend:end_checker', pair.rejected)} -> no\n" in trace


def test_train_and_test_pairs_share_no_task():
    train = {p.meta["task_id"] for p in generate_task_pairs(80, seed=0, split="train")}
    test = {p.meta["task_id"] for p in generate_task_pairs(40, seed=0, split="test")}
    assert train and test and not train & test


def test_met_and_missed_edits_are_what_the_checkers_say():
    text = "The moon pulls the ocean, and the water rises. Then it falls again."
    for prompt in generate_policy_prompts(40, seed=0, instruction_ids=PAIR_INSTRUCTION_IDS, max_constraints=1):
        [iid], [kwargs] = prompt.instruction_id_list, prompt.kwargs
        checker = get_checker(iid)
        args = checker.arguments(kwargs)
        met, missed = comply(iid, kwargs, text, "moon"), violate(iid, kwargs, text, "moon")
        assert checker.fn(met, **args) and not checker.fn(missed, **args), iid
        assert abs(len(met) - len(missed)) <= 12, iid  # a near miss: length does not give it away
    with pytest.raises(ValueError, match="no pair edit for instruction id 'keywords:existence'"):
        comply("keywords:existence", {}, text, "moon")


def test_the_biased_pairs_let_the_longer_response_win():
    fair = generate_task_pairs(40, seed=1)
    biased = generate_task_pairs(40, seed=1, bias="longer")
    assert all(len(p.chosen) >= len(p.rejected) for p in biased)
    flipped = sum(b.chosen != f.chosen for f, b in zip(fair, biased))
    assert 0 < flipped < 40  # length and the true label disagree on some pairs, not on all
    for item in both_orders(biased[:6]):
        assert "is longer" in item.trace and get_prompt("strength").parse(item.trace).winner == item.chosen_position


def test_bad_arguments_fail_in_one_line(tmp_path):
    with pytest.raises(ValueError, match=r"no edit for instruction id\(s\) keywords:existence; known: detectable_"):
        generate_task_pairs(2, instruction_ids=["keywords:existence"])
    with pytest.raises(ValueError, match=r"bias='first'; expected null or one of longer"):
        generate_task_pairs(2, bias="first")
    bad = tmp_path / "bodies.jsonl"
    bad.write_text(json.dumps({"task_id": "no-such-task", "k": 0, "body": "x"}) + "\n")
    with pytest.raises(ValueError, match=r"bodies.jsonl row 1: needs a known task_id"):
        generate_task_pairs(2, bodies_path=bad)


def test_the_loader_and_the_data_option():
    loaded = load_dataset_pairs("policy_task", n=5, seed=0, split="test", max_constraints=2)
    assert len(loaded) == 5 and loaded.pairs == generate_task_pairs(5, 0, "test", max_constraints=2)
    cfg = compose_config(["data=policy_task", "debug=tiny"])
    assert cfg.data.train.loader == "policy_task" and cfg.data.eval.kwargs.split == "test"
    assert BODIES_PATH.name == "task_bodies.jsonl"
