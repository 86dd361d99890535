"""The policy job: train a policy with online RL while an LLM judge grades its answers, and measure it on IFEval.

    setup -> serve / reach the judge -> IFEval before -> RL (local backend or verl) -> IFEval after -> report

`run(cfg)` is a plain function of a composed config (conf/policy.yaml) that returns the run's results
document; `python -m judge_rl.policy` and the tests both call it.

- setup: the prompts (generated, or a rubric / VerIF file), the IFEval subset, the grader; everything that
  can fail on bad data fails here, before a model loads (a reward the prompts cannot support, e.g.
  judge_pairwise without reference answers, rule without checkers).
- the judge: `judge.engine=local` serves the embedded (or a trained: `judge.checkpoint=<run>/rl_model`)
  judge on 127.0.0.1 over the OpenAI chat API, batched; `openai` reaches any endpoint (key from the
  environment); `vllm` uses a running vLLM server or starts one (judge_rl/servers/endpoint.py).
- RL: `train_online` (judge_rl/backends/, shared with the main job) runs the job's RLTask on `cluster.backend`
  (`policy_task`): on the local backend's loop a `PolicyBackend` step, which masks judge failures and stops above
  `judge_failure.max_failure_rate` (judge_rl/policy/backend.py); on verl the task of judge_rl/policy/verl/launch.py.
- IFEval (judge_rl/policy/ifeval_run.py) before RL, every `ifeval.every` steps, and after; the four
  published accuracies with bootstrap intervals, and after-minus-before with a paired bootstrap over prompts.
- `task_eval.enabled`: the same before / after scoring on the policy's own task held out (generated prompts on the
  test split's base tasks, the rule checkers and the guard against degenerate text, judge_rl/policy/tasks/guard.py;
  `task_after_minus_before`): the policy's true gain on what it trained on.

Run directory: `resolved_config.yaml`, `status.json`, `metrics.jsonl` (per step: rewards, timing split,
judge telemetry, failures by reason, bias metrics), `ifeval/{before,after,step_<k>}/` and `task_eval/{before,after}/`
(responses, records, summary), `checkpoints/`, `rl_model/` (the trained policy), `results.json` (job "policy"). Re-running with the
same `run_dir` resumes: RL from its last checkpoint, IFEval from saved answers.
"""

from __future__ import annotations

import json
import logging
import time
from contextlib import nullcontext
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import torch
from omegaconf import DictConfig

from judge_rl.config import check_local_machine
from judge_rl.backends import RLTask, train_online
from judge_rl.policy.config import POLICY_NEUTRAL_KEYS, PolicyJobConfig, to_policy_config
from judge_rl.policy.tasks.prompts import PolicyPrompt
from judge_rl.policy.tasks.sources import load_policy_prompts
from judge_rl.servers.client import JudgeFailureRateExceeded
from judge_rl.servers.reach import require_reachable
from judge_rl.policy.ifeval_run import evaluate_policy, heldout_task_prompts, ifeval_entry, ifeval_metrics, ifeval_prompts
from judge_rl.policy.verl.reward_outcomes import OUTCOMES_FILE, read_outcomes, summary_sections
from judge_rl.reports.console import console
from judge_rl.reports.ifeval_stats import OFFICIAL, SUITE_DIRS, ifeval_gain
from judge_rl.backends.memory import check_plan, job_plan
from judge_rl.models.shape import model_record
from judge_rl.reports.schema import new_results, write_results
from judge_rl.rundir import claim_run_dir, run_wall_s


def run(cfg: DictConfig) -> dict[str, Any]:
    job = to_policy_config(cfg)
    if not job.dry_run and job.judge.engine != "none":  # a judge already serving answers (a bounded wait; verl's
        # launch asks again with its Ray cluster, backends/verl/preflight.py)
        require_reachable("judge.base_url", job.judge.base_url, "the judge's server")
    plan = job_plan(job)  # the policy's own memory against this device (a judge it serves runs elsewhere)
    if plan is not None:
        check_plan(plan)
    with claim_run_dir(Path(job.run_dir), asdict(job), resume=job.resume, neutral=POLICY_NEUTRAL_KEYS, console=console) as run_dir:
        return run_policy_job(job, run_dir)


# ------------------------------------------------------------------ setup


def fit_prompts(prompts: list[PolicyPrompt], tokenizer, max_len: int, counts: dict | None = None) -> list[PolicyPrompt]:
    """The prompts within model.max_prompt_length; the others said on the console and counted, with their ids, in
    `counts` (results.json's data.too_long: on verl, filter_overlong_prompts would drop them without a word)."""
    from judge_rl.rollouts import encode_chat

    lengths = {p.prompt_id: len(encode_chat(tokenizer, p.chat())) for p in prompts}
    kept = [p for p in prompts if lengths[p.prompt_id] <= max_len]
    if not kept:
        raise ValueError(f"every training prompt is longer than model.max_prompt_length={max_len} tokens")
    too_long = {p.prompt_id: lengths[p.prompt_id] for p in prompts if lengths[p.prompt_id] > max_len}
    if too_long:
        console.print(f"[yellow]policy_data: {len(too_long)} prompts over {max_len} tokens dropped[/yellow]")
    if counts is not None:
        counts.update(too_long_units=len(too_long), too_long=dict(list(too_long.items())[:20]),
                      too_long_reason=f"prompt longer than model.max_prompt_length={max_len} tokens")
    return kept


# ------------------------------------------------------------------ the job


def run_policy_job(job: PolicyJobConfig, run_dir: Path) -> dict[str, Any]:
    if job.dry_run:
        from judge_rl.policy.verl.launch import policy_dry_run

        return policy_dry_run(job, run_dir)
    check_local_machine(job.cluster)
    from judge_rl.models.loading import load_model, load_tokenizer, resolve_device
    from judge_rl.policy.grading import Grader, judge_client
    from judge_rl.reports.logging import MetricsLogger
    from judge_rl.servers.endpoint import judge_endpoint

    # setup: data, IFEval prompts, tokenizer; nothing loads a model before these pass
    t_start = time.perf_counter()
    logging.getLogger("httpx").setLevel(logging.WARNING)  # not a line per judge call
    torch.manual_seed(job.seed)
    if job.cluster.threads:
        torch.set_num_threads(job.cluster.threads)
    grader_quality = measured_quality(job.judge)
    tokenizer = load_tokenizer(job.model, job.cache_dir)
    too_long: dict = {}
    prompts = fit_prompts(load_policy_prompts(job), tokenizer, job.model.max_prompt_length, too_long)
    ifeval = ifeval_prompts(job.ifeval) if job.ifeval.enabled and Path(job.ifeval.path).expanduser().is_file() else []
    results = new_results("policy", run_dir)
    if grader_quality is not None:
        results["evaluations"]["grader"] = grader_quality
    results["data"] = {"train_prompts": len(prompts), "ifeval_prompts": len(ifeval), "train_prompts_dropped": too_long}
    results["model"] = model_record(job.model)
    if results["model"].get("notice"):
        console.print(f"[bold yellow]{results['model']['notice']}[/bold yellow]")
    if job.ifeval.enabled and not ifeval:  # as the main job's benchmarks: a machine without the file still trains
        results["data"]["ifeval"] = f"skipped: no file at {job.ifeval.path}"
        console.print(f"[yellow]ifeval: skipped, no file at {job.ifeval.path} (set ifeval.path, or ifeval.enabled=false)[/yellow]")
    logger = MetricsLogger(run_dir, job.logger, asdict(job))
    device = resolve_device(job.cluster.device)

    # what the policy is scored on before and after RL: IFEval, and its own task held out (task_eval)
    suites: dict[str, tuple[list, int, int, str, Any]] = {}
    if ifeval:
        suites["ifeval"] = (ifeval, job.ifeval.max_new_tokens, job.ifeval.batch_size, SUITE_DIRS["ifeval"], None)
    if job.task_eval.enabled:
        held_out, guard = heldout_task_prompts(job.task_eval, job.policy_data)
        results["data"]["task_eval_prompts"] = len(held_out)
        suites["task"] = (held_out, job.task_eval.max_new_tokens, job.task_eval.batch_size, SUITE_DIRS["task"], guard)

    def suite_on(model, name: str, label: str) -> dict[str, Any]:
        items, max_new, batch, directory, guard = suites[name]
        return evaluate_policy(model, tokenizer, items, run_dir / directory / label, max_new_tokens=max_new,
                               batch_size=batch, label=f"{name} {label}", guard=guard)  # fmt: skip

    def ifeval_on(model, label: str) -> dict[str, Any]:
        return suite_on(model, "ifeval", label)

    def evaluate_suites(checkpoint, label: str) -> dict[str, dict[str, Any]]:
        policy = load_model(job.model, job.cache_dir, device, checkpoint=checkpoint, seed=job.seed).eval()
        with torch.no_grad():
            out = {name: suite_on(policy, name, label) for name in suites}
        del policy
        results["evaluations"][label] = {"benchmarks": {name: ifeval_entry(r) for name, r in out.items()}}
        write_results(run_dir, results)
        for name, r in out.items():
            _print_suite(name, label, r)
        return out

    # the policy before training
    before = evaluate_suites(None, "before") if suites else {}

    # RL, the judge served (or reached) for as long as it grades
    serving = judge_endpoint(job.judge, job.cache_dir, job.seed, log_dir=run_dir / "judge_server") \
        if job.judge.engine != "none" else nullcontext(None)  # fmt: skip
    with serving as endpoint:
        client = judge_client(job.judge, endpoint.base_url, endpoint.model) if endpoint is not None else None
        grader = Grader(job.policy_reward, client)
        if endpoint is not None:
            console.print(f"judge: {job.judge.name} ({job.judge.engine}) at {client.endpoint}, model {endpoint.model}")
        task = policy_task(job, run_dir, prompts, grader, ifeval_on if ifeval else None,
                           endpoint.base_url if endpoint is not None else None, endpoint.model if endpoint is not None else None)  # fmt: skip
        try:
            rl = train_online(job, run_dir, task, logger)
        except JudgeFailureRateExceeded as e:  # the stopped step's telemetry and failures stay in metrics.jsonl
            if hasattr(e, "metrics"):
                logger.log(e.metrics, e.step)
            raise
    history = logger.history()
    results["training"]["rl"] = {**rl.trained(history), **training_summary(history)}
    model_dir = rl.model_dir
    if job.cluster.backend == "verl":  # verl's metrics never see a dropped sample: its reward workers' own counts
        outcomes = read_outcomes(run_dir / "verl" / OUTCOMES_FILE)
        if outcomes is not None:
            results["training"]["rl"].update(summary_sections(outcomes))
    write_results(run_dir, results)

    # the trained policy, and each change with its noise (IFEval's under after_minus_before, the task's beside it)
    if suites:
        after = evaluate_suites(model_dir, "after")
        for name in suites:
            key = "after_minus_before" if name == "ifeval" else f"{name}_after_minus_before"
            results["comparisons"][key] = {k: ifeval_gain(before[name]["records"], after[name]["records"], k) for k in OFFICIAL}
    results["final_stage"] = "after" if suites else None
    results["wall_s"] = run_wall_s(run_dir, t_start)
    write_results(run_dir, results)
    logger.summary({k: v for k, v in results["training"]["rl"].items() if isinstance(v, (int, float))})
    logger.finish()
    print_policy_summary(results)
    return results


def measured_quality(judge) -> dict[str, Any] | None:
    """The judge's held-out evaluation from the main-job run that measured it (`judge.quality_run`, at
    `judge.quality_stage`), as this run's `grader` evaluation; None without `quality_run`. A run or stage that is
    not there fails in one line, before a model loads (a study would otherwise lose its x axis)."""
    if not judge.quality_run:
        return None
    path = Path(judge.quality_run).expanduser() / "results.json"
    if not path.is_file():
        raise ValueError(f"judge.quality_run={judge.quality_run}: no results.json there (a main-job run directory)")
    evaluations = json.loads(path.read_text()).get("evaluations", {})
    held_out = evaluations.get(judge.quality_stage or "", {}).get("held_out")
    if not held_out:
        raise ValueError(f"judge.quality_stage={judge.quality_stage}: {path} has no held-out evaluation at that stage "
                         f"(it has: {', '.join(s for s, e in evaluations.items() if e.get('held_out')) or 'none'})")  # fmt: skip
    return {"held_out": held_out, "benchmarks": {}, "source": f"{path}:{judge.quality_stage}"}


def policy_task(job: PolicyJobConfig, run_dir: Path, prompts, grader, ifeval_on, judge_base_url: str | None,
                judge_model: str | None) -> RLTask:  # fmt: skip
    """The policy's RL as every backend takes it (judge_rl/backends/__init__.py): on the local backend a
    `PolicyBackend` step (judge_rl/policy/backend.py: masks judge failures, stops above
    judge_failure.max_failure_rate) and IFEval every ifeval.every steps; on verl, policy/verl/launch.py's VerlTask."""
    from judge_rl.policy.backend import PolicyBackend
    from judge_rl.policy.verl.launch import policy_rl_task

    def make_step(policy, reference, tokenizer, critic):
        return PolicyBackend(policy, reference, tokenizer, job.algorithm, job.trainer, grader, job.judge_failure, critic,
                             samples_dir=run_dir / "samples")  # fmt: skip

    every = job.ifeval.every
    eval_fn = (lambda model, step: ifeval_metrics(ifeval_on(model, f"step_{step}"))) if ifeval_on and every else None
    eval_at = (lambda step, total: step % every == 0 and step != total) if eval_fn else None  # the last: "after"
    return policy_rl_task(job, judge_base_url, judge_model, items=prompts, make_step=make_step, eval_fn=eval_fn,
                          eval_at=eval_at, describe=policy_step_line)  # fmt: skip


# ------------------------------------------------------------------ report


def policy_step_line(step: int, total: int, m: dict[str, float]) -> str:
    score = m.get("critic/score/mean")
    shown = f"{score:.3f}" if isinstance(score, float) else "-"
    return (f"policy step {step}/{total}: reward {shown}  rule {m.get('bias/rule_mean', float('nan')):.3f}  "
            f"judge calls {int(m.get('judge/calls', 0))}  failed samples {int(m['judge_failure/samples'])}"
            f"/{int(m['judge_failure/samples'] + m['judge_failure/trained_samples'] + m['judge_failure/dropped_samples'])}  "
            f"gen {m['timing_s/gen']:.1f}s judge {m['timing_s/judge']:.1f}s (waited {m.get('timing_s/judge_wait', 0.0):.1f}s) "
            f"update {m['timing_s/update']:.1f}s")  # fmt: skip


def _sum(history: list[dict[str, Any]], key: str) -> float | None:
    vals = [h[key] for h in history if isinstance(h.get(key), (int, float))]
    return float(np.sum(vals)) if vals else None


def training_summary(history: list[dict[str, Any]]) -> dict[str, Any]:
    """The RL section of results.json from the metrics rows: the reward curve, the seconds per step and their split,
    judge totals, failures, bias (the steps trained and the resume point: RLResult.trained)."""
    from judge_rl.reports.summary import metric_mean, reward_summary

    history = sorted(history, key=lambda h: h["step"])
    out: dict[str, Any] = reward_summary(history)
    out["timing"] = {k: metric_mean(history, f"timing_s/{k}") for k in ("gen", "judge", "judge_wait", "update")}
    out["judge"] = {k: _sum(history, f"judge/{k}") for k in ("calls", "cache_hits", "prompt_tokens", "completion_tokens", "failures")}
    out["judge"]["latency_p50_s"] = metric_mean(history, "judge/latency_p50_s")
    out["judge"]["latency_p95_s"] = metric_mean(history, "judge/latency_p95_s")
    samples = _sum(history, "judge_failure/samples") or 0.0
    trained = _sum(history, "judge_failure/trained_samples") or 0.0
    dropped = _sum(history, "judge_failure/dropped_samples") or 0.0
    reasons: dict[str, float] = {}
    for h in history:
        for k, v in h.items():
            if k.startswith("judge_failure/reason/") and isinstance(v, (int, float)):
                reasons[k.split("/", 2)[2]] = reasons.get(k.split("/", 2)[2], 0.0) + v
    total = samples + trained + dropped
    out["judge_failure"] = {"samples": samples, "rate": samples / total if total else None, "dropped_samples": dropped,
                            "trained_samples": trained, "reasons": reasons}  # fmt: skip
    out["bias"] = {k.split("/", 1)[1]: metric_mean(history, k) for k in
                   ("bias/judge_fp_rate", "bias/judge_fn_rate", "bias/judge_agreement", "bias/length_corr",
                    "bias/reward_minus_rule", "bias/reward_mean", "bias/rule_mean")}  # fmt: skip
    # pooled over the run's comparisons (a step's share weighs by how many it decided)
    compared = [(h["bias/n_compared"], h["bias/judge_rule_disagree"]) for h in history
                if h.get("bias/n_compared") and isinstance(h.get("bias/judge_rule_disagree"), (int, float))]  # fmt: skip
    n = sum(c for c, _ in compared)
    out["bias"]["n_compared"] = float(n)
    out["bias"]["judge_rule_disagree"] = sum(c * d for c, d in compared) / n if n else None
    return out


def _fmt(x: Any) -> str:
    return "-" if x is None or (isinstance(x, float) and np.isnan(x)) else f"{x:.3f}"


def _print_suite(name: str, label: str, result: dict[str, Any]) -> None:
    console.print(f"{name} {label} ({result['counts']['prompts']} prompts): prompt strict "
                  f"{result['prompt_level_strict_accuracy']:.3f}, instruction strict {result['instruction_level_strict_accuracy']:.3f}, "
                  f"prompt loose {result['prompt_level_loose_accuracy']:.3f}, instruction loose "
                  f"{result['instruction_level_loose_accuracy']:.3f}")  # fmt: skip
    if "checkers" in result:
        failed = ", ".join(f"{n} {reason}" for reason, n in sorted(result["guard_failures"].items())) or "none"
        console.print(f"  (checkers alone: prompt strict {result['checkers']['prompt_level_strict_accuracy']:.3f}; "
                      f"guard failed: {failed})")


def print_policy_summary(results: dict[str, Any]) -> None:
    """The closing table: IFEval before / after / after-minus-before with its interval; the step's split."""
    rl = results["training"].get("rl", {})
    lines = []
    ev = results["evaluations"]
    for name, title, key in (("ifeval", "IFEval", "after_minus_before"), ("task", "Task held out", "task_after_minus_before")):
        if "before" not in ev or "after" not in ev or name not in ev["after"]["benchmarks"]:
            continue
        b, a = ev["before"]["benchmarks"][name]["official"], ev["after"]["benchmarks"][name]["official"]
        gain = results["comparisons"][key]
        n = ev["after"]["benchmarks"][name]["counts"]["prompts"]
        lines += [f"{title + f' ({n} prompts)':32s} before  after   after-before [95% CI, paired bootstrap]"]
        for k in OFFICIAL:
            g = gain[k]
            lines.append(f"  {k.replace('_accuracy', ''):32s} {b[k]:.3f}   {a[k]:.3f}   {g['diff']:+.3f} [{g['low']:+.3f}, {g['high']:+.3f}]")
    t = rl.get("timing", {})
    lines.append(f"RL: {rl.get('steps', 0)} steps, {_fmt(rl.get('seconds_per_step'))} s/step (generation {_fmt(t.get('gen'))}, "
                 f"judging {_fmt(t.get('judge'))} of which waited for {_fmt(t.get('judge_wait'))}, "
                 f"update {_fmt(t.get('update'))})")  # fmt: skip
    if rl.get("reward_curve"):
        c = rl["reward_curve"]
        lines.append(f"reward: first {_fmt(c.get('first_mean'))} -> last {_fmt(c.get('last_mean'))}")
    jf, jd = rl.get("judge_failure", {}), rl.get("judge", {})
    if jd.get("calls"):
        reasons = ", ".join(f"{k} {int(v)}" for k, v in sorted(jf.get("reasons", {}).items(), key=lambda kv: -kv[1]))
        lines.append(f"judge: {int(jd['calls'])} calls, latency p50 {_fmt(jd.get('latency_p50_s'))} s; failed samples "
                     f"{int(jf.get('samples', 0))} (rate {_fmt(jf.get('rate'))}){': ' + reasons if reasons else ''}")  # fmt: skip
    bias = rl.get("bias", {})
    if bias:
        lines.append("bias: " + ", ".join(f"{k} {_fmt(v)}" for k, v in bias.items()))
    lines.append(f"wall time {results['wall_s']:.0f} s; run directory {results['run_dir']}")
    console.print("\n".join(lines))
