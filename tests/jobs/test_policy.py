"""`python -m judge_rl.policy` (judge_rl/jobs/policy.py) in smoke mode (`policy_debug=tiny`): the whole job through a
real local judge server; judge failures masked or their groups dropped, with the counts logged; the failure-rate
stop; resume; no API key in any file written; configs that cannot work refused before a model loads; the
judge_family sweep and its report."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import torch
from hydra import compose, initialize_config_dir

from conftest import CACHE_DIR, CONF_DIR, REPO_ROOT
from judge_rl.backends.local.loop import latest_checkpoint
from judge_rl.models.loading import load_model, load_tokenizer, save_model
from judge_rl.policy.backend import kept_samples
from judge_rl.policy.config import JudgeFailurePolicy, to_policy_config
from judge_rl.jobs.policy import run
from judge_rl.servers.client import JudgeFailureRateExceeded
from judge_rl.policy.rewards import NO_VERDICT, unparseable
from judge_rl.reports.jsonl import read_jsonl
from judge_rl.rundir import read_status
from judge_rl.config.paths import load_model_config
from judge_rl.servers.http import ChatCompletionServer

IFEVAL = REPO_ROOT.parent / "shared" / "data" / "ifeval" / "input_data.jsonl"
SECRET = "sk-policy-test-0d1e2f3a4b5c6d7e8f9a"
KEY_ENV = "JUDGE_RL_POLICY_TEST_KEY"


def policy_cfg(overrides: list[str]):
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(config_name="policy", overrides=[f"cache_dir={CACHE_DIR}", "policy_debug=tiny", *overrides])


@pytest.fixture(scope="module")
def ifeval_file(tmp_path_factory) -> Path:
    """The real IFEval file where this machine has it, else four hand-made rows in its format."""
    if IFEVAL.exists():
        return IFEVAL
    path = tmp_path_factory.mktemp("ifeval") / "input_data.jsonl"
    rows = [{"key": i, "prompt": f"Write about topic {i} in lowercase.", "instruction_id_list": ["change_case:english_lowercase"],
             "kwargs": [{}]} for i in range(4)]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture(scope="module")
def tiny():
    cfg = load_model_config("tiny-random")
    return load_model(cfg, CACHE_DIR, torch.device("cpu"), seed=0), load_tokenizer(cfg, CACHE_DIR)


def odd(text: str) -> bool:
    return int(hashlib.sha256(text.encode()).hexdigest(), 16) % 2 == 1


def graded_response(body) -> str:
    user = body["messages"][-1]["content"]
    return user.split("Text written for the request:\n", 1)[1].split("\n\nQuestion:", 1)[0]


@pytest.fixture
def scripted_judge(tiny):
    """A real local judge server whose reply to a yes/no criterion call depends only on the sample it grades: "Yes"
    for most, "perhaps" (no verdict) for samples whose text hashes odd, so which samples fail is known."""
    server = ChatCompletionServer(*tiny, "judge", 0, reply_override=lambda n, body: "perhaps" if odd(graded_response(body)) else "Yes").start()
    yield server
    server.shutdown()


def judge_at(server, *extra) -> list[str]:
    # retries only cover the transport (a connection the OS dropped under a burst); replies are scripted
    return ["judge=openai", f"judge.base_url={server.base_url}", "judge.served_model=judge", "judge.max_retries=2",
            "judge.backoff_s=0.1", f"judge.api_key_env={KEY_ENV}", *extra]  # fmt: skip


def test_tiny_job_end_to_end_and_resume(tmp_path, ifeval_file):
    run_dir = tmp_path / "run"
    cfg = policy_cfg([f"run_dir={run_dir}", f"ifeval.path={ifeval_file}"])
    results = run(cfg)
    assert results["job"] == "policy" and results["final_stage"] == "after"
    for stage in ("before", "after"):
        official = results["evaluations"][stage]["benchmarks"]["ifeval"]["official"]
        assert set(official) == {"prompt_level_strict_accuracy", "instruction_level_strict_accuracy",
                                 "prompt_level_loose_accuracy", "instruction_level_loose_accuracy"}  # fmt: skip
        assert len(read_jsonl(run_dir / "ifeval" / stage / "responses.jsonl")) == 4
    gain = results["comparisons"]["after_minus_before"]["prompt_level_strict_accuracy"]
    assert gain["n"] == 4 and gain["low"] <= gain["diff"] <= gain["high"]
    rl = results["training"]["rl"]
    assert rl["steps"] == 2 and rl["resumed_from"] == 0 and set(rl["timing"]) == {"gen", "judge", "judge_wait", "update"}
    # the random tiny judge writes no verdict within 8 tokens: every sample failed, none trained, counted by reason
    history = read_jsonl(run_dir / "metrics.jsonl")
    assert [h["step"] for h in history] == [1, 2]
    for h in history:
        samples = 2 * 4  # prompts_per_step x rollout_n
        assert h["judge_failure/samples"] == samples and h["judge_failure/trained_samples"] == 0
        assert h["judge_failure/skipped_update"] == 1
        assert h["judge/calls"] > 0 and sum(v for k, v in h.items() if k.startswith("judge/failures/")) == h["judge/failures"]
        assert h["timing_s/judge"] > 0 and h["timing_s/gen"] > 0
    rows = read_jsonl(run_dir / "samples" / "step_1.jsonl")
    assert len(rows) == 8 and all(r["score"] is None and r["failure"] for r in rows)
    assert (run_dir / "rl_model" / "config.json").exists() and read_status(run_dir)["status"] == "finished"
    # the same run again: the trained policy and every IFEval answer are found, nothing is redone
    again = run(policy_cfg([f"run_dir={run_dir}", f"ifeval.path={ifeval_file}"]))
    assert again["evaluations"]["after"] == results["evaluations"]["after"]
    assert len(read_jsonl(run_dir / "metrics.jsonl")) == 2
    assert again["training"]["rl"]["resumed_from"] == 2 and again["training"]["rl"]["steps"] == 2


@pytest.mark.parametrize("mode", ["mask", "drop_group"])
def test_injected_failures_are_masked_or_dropped_and_counted(tmp_path, ifeval_file, scripted_judge, monkeypatch, mode):
    monkeypatch.setenv(KEY_ENV, SECRET)
    run_dir = tmp_path / mode
    overrides = [f"run_dir={run_dir}", "ifeval.enabled=false", f"judge_failure.mode={mode}", "judge_failure.min_group_size=4",
                 "trainer.prompts_per_step=4", "policy_reward=rubric_yesno"]  # fmt: skip
    run(policy_cfg([*overrides, *judge_at(scripted_judge)]))
    history = {h["step"]: h for h in read_jsonl(run_dir / "metrics.jsonl")}
    floor = 4 if mode == "drop_group" else 2
    for step in (1, 2):
        rows = read_jsonl(run_dir / "samples" / f"step_{step}.jsonl")
        assert len(rows) == 16
        failed = [odd(r["response"]) for r in rows]
        # exactly the samples the judge did not grade
        assert [r["failure"] is not None for r in rows] == failed, [(r["failure"], r["judge_replies"]) for r in rows]
        assert all(r["failure"] == unparseable(NO_VERDICT) and r["score"] is None for r, f in zip(rows, failed) if f)
        # every graded sample: all criteria "Yes", so met = all points (a met flaw subtracts), clipped to [0, 1]
        assert all(0.0 <= r["score"] <= 1.0 for r, f in zip(rows, failed) if not f)
        uids = [f"{i // 4}" for i in range(16)]
        keep, dropped = kept_samples(uids, [not f for f in failed], JudgeFailurePolicy(mode=mode, min_group_size=4), "grpo")
        assert [i for i, r in enumerate(rows) if r["trained"]] == keep
        h = history[step]
        assert h["judge_failure/samples"] == sum(failed) == h["judge_failure/masked_samples"]
        assert h["judge_failure/trained_samples"] == len(keep) and h["judge_failure/dropped_groups"] == dropped
        assert h["judge_failure/dropped_samples"] == 16 - sum(failed) - len(keep)
        assert h.get(f"judge_failure/reason/{unparseable(NO_VERDICT)}", 0) == sum(failed)
        groups_below = sum(1 for g in range(4) if 0 < sum(not f for f in failed[4 * g : 4 * g + 4]) < floor)
        assert dropped == groups_below
        # each criterion call of a failed sample failed; the telemetry counts calls, the failure metrics samples
        assert h.get(f"judge/failures/{unparseable(NO_VERDICT)}", 0) == sum(len(r["judge_replies"]) for r, f in zip(rows, failed) if f)
        if keep:
            assert h["critic/score/mean"] == pytest.approx(sum(rows[i]["score"] for i in keep) / len(keep), rel=1e-5)
    # the key was sent to the judge, and no file of the run holds it
    assert f"Bearer {SECRET}" in scripted_judge.seen_authorization
    for path in run_dir.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


def test_a_step_above_the_failure_rate_stops_the_run_before_its_update(tmp_path, ifeval_file, tiny):
    server = ChatCompletionServer(*tiny, "judge", 0, reply_override=lambda n, body: "perhaps, hard to tell").start()
    try:
        run_dir = tmp_path / "stop"
        cfg = policy_cfg([f"run_dir={run_dir}", "ifeval.enabled=false", "judge_failure.max_failure_rate=0.25",
                          *judge_at(server)])  # fmt: skip
        with pytest.raises(JudgeFailureRateExceeded) as e:
            run(cfg)
    finally:
        server.shutdown()
    message = str(e.value)
    assert "\n" not in message and server.base_url in message and "100.0% (8/8 samples)" in message
    assert f"commonest reason: {unparseable(NO_VERDICT)} (8)" in message
    status = read_status(run_dir)
    assert status["status"] == "failed" and status["error"].endswith(message)
    # the stopped step's telemetry is logged; nothing of it was applied or checkpointed
    [h] = read_jsonl(run_dir / "metrics.jsonl")
    assert h["step"] == 1 and h["judge_failure/samples"] == 8 and h[f"judge/failures/{unparseable(NO_VERDICT)}"] == h["judge/calls"]
    assert latest_checkpoint(run_dir / "checkpoints") is None and not (run_dir / "rl_model").exists()


@pytest.mark.parametrize("overrides, message", [
    (["policy_reward=judge_pairwise"], "policy_reward=judge_pairwise needs a reference answer for every prompt; "
                                       "policy_data=generated: prompt 'ifgen-train-s0-000000' has none"),
    (["judge=none"], "policy_reward=rubric asks a judge; judge=none has none"),
    (["judge=openai", "judge.api_key_env=JUDGE_RL_UNSET_KEY"], "the environment variable JUDGE_RL_UNSET_KEY is not set"),
    (["judge_failure.mode=drop_group", "judge_failure.min_group_size=9"], "judge_failure.min_group_size=9 exceeds"),
    (["judge.engine=tgi"], "judge.engine='tgi': expected one of local, openai, vllm, none"),
    (["algorithm=bt"], "the policy job trains with online RL"),
    # the online-RL checks the main job makes, shared (judge_rl.config.check_online_algorithm)
    (["algorithm.ppo_micro_batch_size=3"], "algorithm.ppo_micro_batch_size=3 must divide the mini-batch 8"),
    (["policy_data=rubric_file", "policy_data.path=/nonexistent.jsonl"], "/nonexistent.jsonl"),
    (["policy_data.instruction_ids=[punctuation:no_comma,keywords:nope]"], "policy_data.instruction_ids: ['keywords:nope']"),
    (["trainer.rollout_engine=sglang"], "trainer.rollout_engine='sglang': expected one of auto, hf, vllm"),
    (["trainer.logprob_pass=flash"], "trainer.logprob_pass='flash': expected auto or one of padded, shared_prefix"),
    (["task_eval.n=0"], "task_eval.n=0: expected >= 1"),
    (["seed=-1"], "seed=-1: expected [0, 4294967295]"),
    (["++judge.quality_run=/nonexistent"], "judge.quality_run=/nonexistent: no results.json there"),
])  # fmt: skip
def test_configs_that_cannot_work_fail_in_one_line_before_a_model_loads(tmp_path, ifeval_file, overrides, message):
    with pytest.raises(Exception) as e:
        run(policy_cfg([f"run_dir={tmp_path / 'r'}", f"ifeval.path={ifeval_file}", *overrides]))
    assert message in str(e.value) and "\n" not in str(e.value)
    assert not (tmp_path / "r" / "rl_model").exists()


# peak memory: 8.3 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
def test_judge_family_sweep_in_smoke_mode_and_its_report(tmp_path, ifeval_file, tiny, monkeypatch):
    """Every point of sweeps/judge_family.yaml (the trained judge: a saved tiny model; the API judge: a local endpoint
    with a key in the environment), then the report over them."""
    import yaml

    from judge_rl.report import build_table, write_report

    judge_dir = tmp_path / "trained_judge"
    save_model(tiny[0], tiny[1], judge_dir)
    monkeypatch.setenv("JUDGE_RL_TRAINED_JUDGE", str(judge_dir))
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    sweep = yaml.safe_load((REPO_ROOT / "sweeps" / "judge_family.yaml").read_text())
    choices = sweep["hydra"]["sweeper"]["params"]["+reward_judge"].split(",")
    assert choices == ["embedded", "trained", "rule", "api"]
    server = ChatCompletionServer(*tiny, "judge", 0, reply_override=lambda n, body: '{"criteria_met": true}').start()
    try:
        for i, choice in enumerate(choices):
            point = tmp_path / "sweep" / str(i)
            overrides = ["+sweeps=judge_family", f"+reward_judge={choice}"]
            (point / ".hydra").mkdir(parents=True)
            (point / ".hydra" / "overrides.yaml").write_text(yaml.safe_dump(overrides))
            extra = ["judge.model=tiny-random"] if choice in ("embedded", "trained") else []
            extra += [f"judge.base_url={server.base_url}", "judge.served_model=judge"] if choice == "api" else []
            results = run(policy_cfg([*overrides, f"run_dir={point}", f"ifeval.path={ifeval_file}", *extra]))
            assert results["training"]["rl"]["steps"] == 2
    finally:
        server.shutdown()
    cfg = policy_cfg(["+sweeps=judge_family", f"ifeval.path={ifeval_file}"])
    columns = list(cfg.report.columns)
    write_report([tmp_path / "sweep"], tmp_path / "sweep", columns=columns, chart=list(cfg.report.chart))
    table = build_table([tmp_path / "sweep"], columns)
    assert [r.label for r in table.rows] == [f"reward_judge={c}" for c in choices]
    cells = {r.label: r for r in table.rows}
    # the rule reward has no judge: nothing failed; the API judge answered every criterion
    rule = json.loads((tmp_path / "sweep" / "2" / "results.json").read_text())["training"]["rl"]
    assert rule["judge_failure"]["rate"] == 0.0 and rule["judge"]["calls"] == 0.0
    api = json.loads((tmp_path / "sweep" / "3" / "results.json").read_text())["training"]["rl"]
    assert api["judge_failure"]["rate"] == 0.0 and api["judge"]["calls"] > 0
    assert "after_minus_before/prompt_level_strict_accuracy" in columns and len(cells) == 4
    assert (tmp_path / "sweep" / "report.md").read_text().count("| finished") == 4


def test_ifeval_every_k_steps_is_logged_at_that_step(tmp_path, ifeval_file):
    run_dir = tmp_path / "every"
    run(policy_cfg([f"run_dir={run_dir}", f"ifeval.path={ifeval_file}", "ifeval.every=1", "ifeval.limit=2"]))
    history = {h["step"]: h for h in read_jsonl(run_dir / "metrics.jsonl")}
    # step 1 of 2: evaluated in the loop; the last step is the "after" evaluation
    assert {"ifeval/prompt_strict", "ifeval/instruction_strict", "ifeval/prompt_loose", "ifeval/instruction_loose"} <= set(history[1])
    assert "ifeval/prompt_strict" not in history[2] and history[1]["timing_s/testing"] > 0
    assert len(read_jsonl(run_dir / "ifeval" / "step_1" / "responses.jsonl")) == 2
    assert (run_dir / "ifeval" / "after" / "summary.json").exists()


def test_a_missing_ifeval_file_skips_ifeval_and_says_so(tmp_path):
    run_dir = tmp_path / "noifeval"
    results = run(policy_cfg([f"run_dir={run_dir}", f"ifeval.path={tmp_path / 'absent.jsonl'}", "policy_reward=rule", "judge=none"]))
    assert results["data"]["ifeval"] == f"skipped: no file at {tmp_path / 'absent.jsonl'}"
    assert results["evaluations"] == {} and results["training"]["rl"]["steps"] == 2
    # the rule reward needs no judge: every sample graded, no call made
    assert all(h["judge_failure/samples"] == 0 and h["judge/calls"] == 0 for h in read_jsonl(run_dir / "metrics.jsonl"))


@pytest.mark.parametrize("fault, reason", [("judge.faults.fail_every=5", "judge server error"),
                                           ("judge.faults.garbage_every=5", "judge server error")])  # fmt: skip
def test_failures_injected_from_config_reach_the_job_as_counted_failures_never_scores(tmp_path, fault, reason):
    """judge.faults.* (the served judge's hooks, on the main before this constructor arguments only): every
    fifth call answers HTTP 500, or HTTP 200 with a body that is not JSON; the others reply "Yes". Each failed call fails its
    sample, counted under its reason and never scored; the graded ones train."""
    run_dir = tmp_path / "run"
    run(policy_cfg([f"run_dir={run_dir}", "ifeval.enabled=false", "policy_reward=rubric_yesno", fault,
                    'judge.faults.reply="Yes"', "judge.max_retries=0", "judge.concurrency=1"]))  # fmt: skip
    history = read_jsonl(run_dir / "metrics.jsonl")
    assert [h["step"] for h in history] == [1, 2]
    failed = sum(h.get(f"judge/failures/{reason}", 0) for h in history)
    calls = sum(h["judge/calls"] for h in history)
    assert 0 < failed < calls and sum(h["judge/failures"] for h in history) == failed  # only the injected ones
    assert sum(h["judge_failure/trained_samples"] for h in history) > 0
    rows = [r for step in (1, 2) for r in read_jsonl(run_dir / "samples" / f"step_{step}.jsonl")]
    assert any(r["failure"] and reason in r["failure"] for r in rows)
    assert all((r["score"] is None) == bool(r["failure"]) for r in rows)  # a failed sample is never a score


def test_a_hung_call_outlasts_the_clients_timeout_unless_hang_s_is_set():
    from judge_rl.policy.config import JudgeFaultsConfig

    assert JudgeFaultsConfig(hang_every=3).server_kwargs(timeout_s=120.0)["hang_s"] == 121.0
    assert JudgeFaultsConfig(hang_every=3, hang_s=2.0).server_kwargs(timeout_s=120.0)["hang_s"] == 2.0
    assert JudgeFaultsConfig(reply="perhaps").server_kwargs(60.0)["reply_override"](7, {}) == "perhaps"
    assert not JudgeFaultsConfig().active() and JudgeFaultsConfig(fail_first_n=1).active()


def test_judge_faults_need_the_judge_the_job_serves(tmp_path):
    with pytest.raises(ValueError, match=r"judge.faults.\*: .*judge.engine=openai"):
        to_policy_config(policy_cfg([f"run_dir={tmp_path}", "judge=openai", "judge.base_url=http://127.0.0.1:9/v1", "judge.served_model=x",
                                     "+judge.faults.fail_every=3"]))  # fmt: skip
    with pytest.raises(ValueError, match=r"judge.faults.\*: .*judge.base_url=http://127.0.0.1:9/v1 reaches another"):
        to_policy_config(policy_cfg([f"run_dir={tmp_path}", "judge.base_url=http://127.0.0.1:9/v1",
                                     "judge.faults.fail_every=3"]))  # a local engine reaching a running server
    assert to_policy_config(policy_cfg([f"run_dir={tmp_path}", "judge.faults.fail_every=3"])).judge.faults.fail_every == 3


def test_a_slow_judge_costs_the_step_its_slowest_call_not_the_sum_of_them(tmp_path):
    """Every judge call is held 1 s by the served judge (judge.faults.hang_every=1, hang_s=1) and then answered "Yes".
    A step's calls are in flight together (a group's as soon as its samples exist): the step waits about one call's
    delay for the judge after sampling (timing_s/judge_wait), not one per call."""
    run_dir = tmp_path / "run"
    run(policy_cfg([f"run_dir={run_dir}", "ifeval.enabled=false", "policy_reward=rubric_yesno", "trainer.total_steps=1",
                    "judge.faults.hang_every=1", "judge.faults.hang_s=1.0", 'judge.faults.reply="Yes"',
                    "judge.max_retries=0"]))  # fmt: skip
    (h,) = read_jsonl(run_dir / "metrics.jsonl")
    assert h["judge/calls"] >= 8 and h["judge/failures"] == 0  # one after another: >= 8 s
    assert 1.0 <= h["timing_s/judge_wait"] < 3.0
    assert h["timing_s/judge"] >= 1.0 and h["timing_s/gen"] > 0


def test_the_task_held_out_is_scored_before_and_after_with_a_paired_interval(tmp_path):
    """task_eval: generated prompts on the test split's base tasks (none of the training prompts' tasks), answered by
    the policy before and after RL, scored by the rule checkers and the guard, the change with its paired interval."""
    from judge_rl.policy.config import PolicyDataConfig, TaskEvalConfig
    from judge_rl.policy.tasks.prompts import generate_policy_prompts
    from judge_rl.policy.ifeval_run import heldout_task_prompts

    held, guard = heldout_task_prompts(TaskEvalConfig(n=6), PolicyDataConfig())
    assert heldout_task_prompts(TaskEvalConfig(n=6, guard=False), PolicyDataConfig())[1] is None
    assert guard(held[0].key, "P.S. " * 20) == "repetitive"
    assert len(held) == 6 and all(str(p.key).startswith("ifgen-test-") and p.instruction_id_list for p in held)
    train_texts = {p.prompt for p in generate_policy_prompts(256, seed=0, split="train")}
    assert not train_texts & {p.prompt for p in held}
    run_dir = tmp_path / "run"
    results = run(policy_cfg([f"run_dir={run_dir}", "ifeval.enabled=false", "policy_reward=rule", "judge=none",
                              "task_eval.enabled=true", "task_eval.n=4", "task_eval.max_new_tokens=12"]))  # fmt: skip
    assert results["data"]["task_eval_prompts"] == 4 and results["final_stage"] == "after"
    for stage in ("before", "after"):
        assert set(results["evaluations"][stage]["benchmarks"]) == {"task"}
        assert len(read_jsonl(run_dir / "task_eval" / stage / "responses.jsonl")) == 4
    for stage in ("before", "after"):  # the tiny random policy writes noise: the guard fails it, the checkers may not
        entry = results["evaluations"][stage]["benchmarks"]["task"]
        records = read_jsonl(run_dir / "task_eval" / stage / "records.jsonl")
        assert all(r["guard"] is not None and not any(r["follow_instruction_list_loose"]) for r in records)
        assert entry["official"]["instruction_level_loose_accuracy"] == 0.0
        assert entry["metrics"]["guard/failed_share"] == 1.0
        checked = sum(map(sum, (r["checkers_loose"] for r in records))) / sum(len(r["checkers_loose"]) for r in records)
        assert entry["metrics"]["checkers/instruction_level_loose_accuracy"] == checked
    gain = results["comparisons"]["task_after_minus_before"]["prompt_level_strict_accuracy"]
    assert gain["n"] == 4 and gain["low"] <= gain["diff"] <= gain["high"]
    assert "after_minus_before" not in results["comparisons"]  # no IFEval in this run


def shown_responses(body) -> tuple[str, str]:
    user = body["messages"][-1]["content"]
    a = user.split("[The Start of Response (a)]\n", 1)[1].split("\n[The End of Response (a)]", 1)[0]
    b = user.split("[The Start of Response (b)]\n", 1)[1].split("\n[The End of Response (b)]", 1)[0]
    return a, b


def test_pairwise_within_the_group_needs_no_reference_and_compares_each_sample_with_the_next(tmp_path, tiny):
    """policy_reward=judge_pairwise opponent=group on generated prompts (no references): each sample is judged, in both
    orders, against the next sample of its group; a judge that always prefers the longer response gives a sample 1 where
    it is longer than its neighbour, 0 where shorter, and no call fails."""
    calls = []

    def longer_wins(n, body):
        a, b = shown_responses(body)
        calls.append((a, b))
        return f"<think>\nlength\n</think>\nTherefore, Response ({'a' if len(a) >= len(b) else 'b'}) is better, and the strength is [[3]]."

    server = ChatCompletionServer(*tiny, "judge", 0, reply_override=longer_wins).start()
    try:
        run_dir = tmp_path / "run"
        run(policy_cfg([f"run_dir={run_dir}", "ifeval.enabled=false", "policy_reward=judge_pairwise",
                        "policy_reward.opponent=group", "policy_reward.use_strength=false", *judge_at(server)]))  # fmt: skip
    finally:
        server.shutdown()
    rows = read_jsonl(run_dir / "samples" / "step_1.jsonl")
    assert rows and all(r["failure"] is None for r in rows)
    n = len(rows) // len({r["prompt_id"] for r in rows}) if len({r["prompt_id"] for r in rows}) else 0
    for start in range(0, len(rows), n):
        group = [r["response"] for r in rows[start:start + n]]
        for j, r in enumerate(group):
            after = [group[(j + k) % n] for k in range(1, n)]
            opponent = next((o for o in after if o.strip()), "(no answer)")
            if len(r) != len(opponent):  # both orders agree on a length difference
                assert rows[start + j]["score"] == float(len(r) > len(opponent))
            assert (r, opponent) in calls or (opponent, r) in calls


def test_group_opponents_need_a_pairwise_reward_the_local_backend_and_a_group(tmp_path):
    base = [f"run_dir={tmp_path / 'r'}", "ifeval.enabled=false", "++policy_reward.opponent=group"]
    for extra, message in ((["policy_reward=rule", "judge=none"], "only policy_reward=judge_pairwise compares samples"),
                           (["policy_reward=judge_pairwise", "algorithm.rollout_n=1"], "a group needs 2 samples"),
                           (["policy_reward=judge_pairwise", "policy_reward.opponent=peer"], "policy_reward.opponent='peer'")):  # fmt: skip
        with pytest.raises(ValueError) as e:
            run(policy_cfg([*base, *extra]))
        assert message in str(e.value) and "\n" not in str(e.value)


def test_prompts_over_the_budget_are_counted_and_named_not_dropped_silently():
    """On verl, filter_overlong_prompts drops such prompts without a word: the job counts them first (results.json's
    data.train_prompts_dropped)."""
    from judge_rl.jobs.policy import fit_prompts
    from judge_rl.policy.tasks.prompts import PolicyPrompt
    from judge_rl.rollouts import encode_chat

    tokenizer = load_tokenizer(load_model_config("tiny-random"), CACHE_DIR)
    prompts = [PolicyPrompt(prompt_id="short", prompt="Say hi."),
               PolicyPrompt(prompt_id="long", prompt="Repeat after me: " + "word " * 200)]
    budget = len(encode_chat(tokenizer, prompts[0].chat())) + 5
    counts: dict = {}
    kept = fit_prompts(prompts, tokenizer, budget, counts)
    assert [p.prompt_id for p in kept] == ["short"]
    assert counts["too_long_units"] == 1 and list(counts["too_long"]) == ["long"]
    assert counts["too_long"]["long"] == len(encode_chat(tokenizer, prompts[1].chat())) > budget
    assert f"model.max_prompt_length={budget}" in counts["too_long_reason"]


def test_a_judge_base_url_with_nothing_behind_it_fails_in_one_line_before_the_run_dir(tmp_path):
    """issue 55: an address with nothing behind it is found at the start (a bounded wait), not call after call."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ValueError) as err:
        run(policy_cfg([f"run_dir={tmp_path / 'run'}", "judge=openai", f"judge.base_url=http://127.0.0.1:{port}/v1",
                        "judge.served_model=judge", "logger=none"]))
    assert str(err.value).startswith(f"judge.base_url=http://127.0.0.1:{port}/v1: connection refused at 127.0.0.1:{port}")
    assert not (tmp_path / "run").exists()
