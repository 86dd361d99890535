"""Serving paths side by side, in one run, on the same prompts and model: the judge-evaluation workload, the policy
job's judging workload and the GRPO sampling workload (issue 24, item 1).

    python scripts/bench_serving.py                          # all three workloads, embedded SmolLM2-135M fp32
    python scripts/bench_serving.py --workloads eval         # one workload
    python scripts/bench_serving.py --skip vllm              # where vLLM's CPU build is not installed

Workload: the first `--pairs` LLMBar-Natural pairs (../shared/data) in both orders with the Think-J strength prompt,
greedy, `--max-new-tokens` at most: what `python -m judge_rl.eval` sends. Paths:
  hf        `server=hf`: HFServer in this process (the project's batched greedy engine)
  http      `server=openai` -> `python -m judge_rl.servers.http` in its own process (the project's OpenAI-compatible
            server, the policy job's `judge.engine=local`), through OpenAIServer (the client every judge call uses)
  vllm      `server=openai` -> vLLM's CPU build started as the policy job starts it (`judge.engine=vllm`,
            judge_rl/servers/endpoint.py: `vllm serve ... --dtype float32 --enforce-eager`), first call and warm
  vllm offline  `server=vllm` (and `server=auto` where vLLM is installed): vLLM's engine in this process
Policy judging workload (`policy`): what one default policy-job step sends: 4 generated prompts x 4 samples of the
embedded policy (hf sampler, seeded, 128 new tokens), graded with policy_reward=rubric_yesno (one short call per
criterion, the conversation and response a prefix shared by a sample's calls) at judge=embedded's settings,
through the policy job's own Grader and endpoint: judge.engine=local (the project's server in this process) and
judge.engine=vllm (`vllm serve`, prefix caching on: vLLM's default; and off). Rows: seconds, calls, calls/s,
failed calls, replies equal to the local engine's.
Sampling workload (`sampling`): GRPO rollouts of the embedded policy, 2 prompts x n 4 x 64 tokens and 8 x 8 x 128,
temperature 1: `sample_generate` (trainer.rollout_engine=hf) against the colocated vLLM sampler
(trainer.rollout_engine=vllm; its start-up and one weight reload reported apart). Outputs are samples, so only
throughput compares.
Each row of the eval workload: seconds for the whole workload, pairs/s, generated tokens/s, the server's start-up seconds (ready to
answer), its peak resident memory (VmHWM summed over the server's process tree; in-process: this process's), and how many outputs
equal the hf engine's. Ratios are against `hf`. Nothing is asserted: targets live here, not in the test suite. Run
it alone: a benchmark sharing the 2 cores is void.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from judge_rl.config.paths import load_benchmark_config  # noqa: E402
from judge_rl.data.pairs import both_orders  # noqa: E402
from judge_rl.evaluation.benchmarks import get_benchmark  # noqa: E402
from judge_rl.models.loading import load_model, load_tokenizer  # noqa: E402
from judge_rl.policy.config import RewardJudgeConfig  # noqa: E402
from judge_rl.prompts import get_prompt  # noqa: E402
from judge_rl.servers import HFServer  # noqa: E402
from judge_rl.servers.endpoint import judge_endpoint  # noqa: E402
from judge_rl.config.paths import load_model_config  # noqa: E402
from judge_rl.servers.openai import OpenAIServer  # noqa: E402

PATHS = ("hf", "http", "vllm")
WORKLOADS = ("eval", "policy", "sampling")


def process_tree(pid: int) -> list[int]:
    """pid and its descendants (vLLM's API server starts its engine as a child process)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                todo += [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                pass
    return out


def peak_rss_mb(pid: int | None = None) -> float | None:
    """The summed VmHWM (MB) of a process and its descendants (an upper bound of their joint peak), or this
    process's peak when pid is None."""
    if pid is None:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    total = 0.0
    for p in process_tree(pid):
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    total += int(line.split()[1]) / 1024
        except OSError:
            pass
    return total or None


def timed(server, messages, max_new_tokens: int) -> tuple[float, list]:
    t = time.perf_counter()
    outs = server.complete(messages, max_new_tokens=max_new_tokens)
    return time.perf_counter() - t, outs


def wait_ready(base_url: str, process: subprocess.Popen, timeout_s: float) -> None:
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with code {process.returncode} before it was ready")
        try:
            if httpx.get(f"{base_url}/models", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise TimeoutError(f"{base_url} not ready after {timeout_s:.0f} s")


def row(name: str, seconds: float, outs, reference, tokenizer, n_pairs: int, startup_s=None, peak_mb=None) -> dict:
    texts = [o.text or "" for o in outs]
    tokens = sum(len(tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts)
    same = None if reference is None else sum(a == (b.text or "") for a, b in zip(texts, reference))
    failed = sum(not o.ok for o in outs)
    return {"path": name, "seconds": seconds, "pairs_per_s": n_pairs / seconds, "gen_tokens_per_s": tokens / seconds,
            "startup_s": startup_s, "peak_mb": peak_mb, "same_as_hf": same, "failed": failed}


def eval_workload(args) -> list[dict]:
    cfg = load_model_config(args.model)
    tokenizer = load_tokenizer(cfg, args.cache_dir)
    spec = load_benchmark_config("llmbar_natural", limit=args.pairs)
    pairs = get_benchmark(spec.kind).load(spec).units
    prompt = get_prompt("strength")
    messages = [prompt.messages(item) for item in both_orders(pairs)]
    n_pairs = len(pairs)
    print(f"model {cfg.name} fp32, {torch.get_num_threads()} threads; {n_pairs} pairs -> {len(messages)} prompts; "
          f"max_new_tokens {args.max_new_tokens}", flush=True)
    rows, reference = [], None

    if "hf" not in args.skip:
        model = load_model(cfg, args.cache_dir, torch.device("cpu"))
        engine = HFServer(model, tokenizer, args.batch_size)
        engine.complete(messages[:2], max_new_tokens=4)  # warm-up
        seconds, reference = timed(engine, messages, args.max_new_tokens)
        rows.append(row("hf (in process)", seconds, reference, None, tokenizer, n_pairs, 0.0, peak_rss_mb()))
        print(f"hf: {seconds:.1f} s", flush=True)
        del model, engine

    if "http" not in args.skip:
        base_url = f"http://127.0.0.1:{args.port}/v1"
        t = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "judge_rl.servers.http", "--model", args.model, "--port",
                                 str(args.port), "--max-batch", "32", "--cache-dir", args.cache_dir],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        try:
            wait_ready(base_url, proc, 300)
            startup = time.perf_counter() - t
            client = OpenAIServer(base_url, cfg.name, concurrency=args.concurrency, timeout_s=600, max_retries=0)
            seconds, outs = timed(client, messages, args.max_new_tokens)
            rows.append(row("http (judge_rl server)", seconds, outs, reference, tokenizer, n_pairs, startup,
                            peak_rss_mb(proc.pid)))  # fmt: skip
            print(f"http: {seconds:.1f} s", flush=True)
        finally:
            proc.terminate()
            proc.wait(timeout=30)

    if "vllm" not in args.skip:  # server=vllm / server=auto: the engine in this process
        from judge_rl.config.schema import ServerConfig
        from judge_rl.servers import VLLMServer

        t = time.perf_counter()
        engine = VLLMServer.from_config(ServerConfig(name="vllm"), cfg, args.cache_dir)
        startup = time.perf_counter() - t
        try:
            for label in ("vllm offline first call", "vllm offline warm"):
                seconds, outs = timed(engine, messages, args.max_new_tokens)
                rows.append(row(label, seconds, outs, reference, tokenizer, n_pairs, startup, peak_rss_mb()))
                print(f"{label}: {seconds:.1f} s", flush=True)
        finally:
            engine.close()
        judge = RewardJudgeConfig(engine="vllm", model=args.model, port=args.port + 1, startup_timeout_s=900.0)
        t = time.perf_counter()
        with judge_endpoint(judge, args.cache_dir, log_dir=tempfile.mkdtemp(prefix="bench_vllm_")) as endpoint:
            startup = time.perf_counter() - t
            client = OpenAIServer(endpoint.base_url, endpoint.model, concurrency=args.concurrency, timeout_s=600,
                                  max_retries=0)  # fmt: skip
            for label in ("vllm served first call", "vllm served warm"):
                seconds, outs = timed(client, messages, args.max_new_tokens)
                client._cache.clear()  # the warm call is sent again, not answered from the client's cache
                rows.append(row(label, seconds, outs, reference, tokenizer, n_pairs, startup,
                                peak_rss_mb(endpoint.process.pid if endpoint.process else None)))  # fmt: skip
                print(f"{label}: {seconds:.1f} s", flush=True)

    hf = next((r for r in rows if r["path"].startswith("hf")), None)
    print(f"\n{'path':28s}{'seconds':>9s}{'pairs/s':>9s}{'gen tok/s':>11s}{'vs hf':>7s}{'start s':>9s}"
          f"{'peak MB':>9s}{'same as hf':>12s}")
    for r in rows:
        ratio = f"{hf['seconds'] / r['seconds']:.2f}" if hf else "-"
        same = "-" if r["same_as_hf"] is None else f"{r['same_as_hf']}/{len(messages)}"
        peak = "-" if r["peak_mb"] is None else f"{r['peak_mb']:.0f}"
        start = "-" if r["startup_s"] is None else f"{r['startup_s']:.0f}"
        print(f"{r['path']:28s}{r['seconds']:9.1f}{r['pairs_per_s']:9.2f}{r['gen_tokens_per_s']:11.1f}{ratio:>7s}"
              f"{start:>9s}{peak:>9s}{same:>12s}" + (f"  ({r['failed']} failed)" if r["failed"] else ""))
    return rows


def policy_samples(args, cfg, tokenizer):
    """One default policy-job step's samples: 4 generated prompts x 4 samples of the embedded policy, 128 tokens."""
    from judge_rl.policy.tasks.prompts import generate_policy_prompts
    from judge_rl.rollouts import encode_chat, sample_generate

    prompts = generate_policy_prompts(4, seed=0, min_constraints=1, max_constraints=2)
    policy = load_model(cfg, args.cache_dir, torch.device("cpu"), seed=0)
    torch.manual_seed(0)
    groups = sample_generate(policy, tokenizer, [encode_chat(tokenizer, p.chat()) for p in prompts], num_samples=4,
                             max_new_tokens=128, batch_size=16, temperature=1.0)  # fmt: skip
    del policy
    return [p for p in prompts for _ in range(4)], [g.text for group in groups for g in group]


def policy_workload(args) -> list[dict]:
    """The policy job's judging of one step through its own Grader, per judge engine (module docstring)."""
    from dataclasses import asdict

    from judge_rl.config.paths import load_group_file
    from judge_rl.policy.config import PolicyRewardConfig
    from judge_rl.policy.grading import Grader, judge_client

    cfg = load_model_config(args.model)
    tokenizer = load_tokenizer(cfg, args.cache_dir)
    prompts, responses = policy_samples(args, cfg, tokenizer)
    reward = load_group_file("policy_reward", "rubric_yesno", PolicyRewardConfig, "policy_reward")
    embedded = {k: v for k, v in asdict(load_group_file("judge", "embedded", RewardJudgeConfig, "judge")).items()
                if k != "faults"}
    print(f"\npolicy judging: {len(responses)} samples of {len(set(p.prompt_id for p in prompts))} prompts, "
          f"policy_reward=rubric_yesno, judge=embedded settings (max_tokens {embedded['max_tokens']})", flush=True)
    paths = [("local (judge_rl server)", {"engine": "local"})]
    if "vllm" not in args.skip:
        paths += [("vllm, prefix caching", {"engine": "vllm", "port": args.port + 2}),
                  ("vllm, no prefix caching", {"engine": "vllm", "port": args.port + 3,
                                               "vllm_args": ["--no-enable-prefix-caching"]})]  # fmt: skip
    rows, reference = [], None
    for label, engine in paths:
        judge = RewardJudgeConfig(**{**embedded, "model": args.model, "startup_timeout_s": 900.0, **engine})
        t = time.perf_counter()
        with judge_endpoint(judge, args.cache_dir, log_dir=tempfile.mkdtemp(prefix="bench_policy_")) as endpoint:
            startup = time.perf_counter() - t
            for attempt in ("first", "warm"):
                grader = Grader(reward, judge_client(judge, endpoint.base_url, endpoint.model))
                t = time.perf_counter()
                graded = grader.grade_many(prompts, responses)
                seconds = time.perf_counter() - t
                replies = [r for g in graded for r in g.replies]
                tel = grader.telemetry.summary()
                same = None if reference is None else sum(a == b for a, b in zip(replies, reference))
                if reference is None:
                    reference = replies
                rows.append({"path": f"{label} ({attempt})", "seconds": seconds, "calls": len(replies),
                             "calls_per_s": len(replies) / seconds, "failed_calls": tel.get("judge/failures", 0.0),
                             "startup_s": startup, "same_as_local": same})  # fmt: skip
                print(f"{label} ({attempt}): {seconds:.1f} s, {len(replies)} calls", flush=True)
    local = rows[1] if len(rows) > 1 else rows[0]  # the local engine's warm row
    print(f"\n{'policy judging path':34s}{'seconds':>9s}{'calls':>7s}{'calls/s':>9s}{'vs local':>9s}{'failed':>8s}"
          f"{'start s':>9s}{'same as local':>15s}")
    for r in rows:
        same = "-" if r["same_as_local"] is None else f"{r['same_as_local']}/{r['calls']}"
        print(f"{r['path']:34s}{r['seconds']:9.1f}{r['calls']:7d}{r['calls_per_s']:9.2f}"
              f"{local['seconds'] / r['seconds']:9.2f}{r['failed_calls']:8.0f}{r['startup_s']:9.0f}{same:>15s}")
    return rows


def sampling_workload(args) -> list[dict]:
    """GRPO sampling: the policy's own sampler against the colocated vLLM sampler (module docstring)."""
    from judge_rl.policy.tasks.prompts import generate_policy_prompts
    from judge_rl.rollouts import build_sampler, encode_chat

    cfg = load_model_config(args.model)
    tokenizer = load_tokenizer(cfg, args.cache_dir)
    policy = load_model(cfg, args.cache_dir, torch.device("cpu"), seed=0)
    all_prompts = [encode_chat(tokenizer, p.chat()) for p in generate_policy_prompts(8, seed=1)]
    shapes = [(2, 4, 64), (8, 8, 128)]
    engines = ["hf"] + ([] if "vllm" in args.skip else ["vllm"])
    rows, greedy_ids = [], {}
    print("\nsampling: GRPO rollouts of the embedded policy, temperature 1", flush=True)
    for engine in engines:
        t = time.perf_counter()
        sampler = build_sampler(engine, policy, tokenizer)
        startup = time.perf_counter() - t
        t = time.perf_counter()
        if engine == "vllm":
            sampler._fresh = False  # time one real reload, as every step after the first does
        sampler.sync(policy)
        reload_s = time.perf_counter() - t
        try:
            for n_prompts, n, new in shapes:
                prompts = all_prompts[:n_prompts]
                torch.manual_seed(0)
                sampler.sample(prompts[:1], num_samples=2, max_new_tokens=4, temperature=1.0, top_p=1.0)  # warm-up
                t = time.perf_counter()
                groups = sampler.sample(prompts, num_samples=n, max_new_tokens=new, temperature=1.0, top_p=1.0)
                seconds = time.perf_counter() - t
                tokens = sum(len(g.response_ids) for group in groups for g in group)
                rows.append({"path": engine, "shape": f"{n_prompts}x{n}x{new}", "seconds": seconds, "tokens": tokens,
                             "tokens_per_s": tokens / seconds, "startup_s": startup, "reload_s": reload_s})  # fmt: skip
                print(f"{engine} {n_prompts}x{n}x{new}: {seconds:.1f} s, {tokens} tokens", flush=True)
            # greedy agreement with the policy's own decoding (temperature 0 on both; the hf sampler is greedy there)
            greedy = sampler.sample(all_prompts, num_samples=1, max_new_tokens=64, temperature=0.0, top_p=1.0)
            greedy_ids[engine] = [g[0].response_ids for g in greedy]
        finally:
            sampler.close()
    print(f"\n{'sampler':10s}{'shape':>10s}{'seconds':>9s}{'tokens':>8s}{'tok/s':>8s}{'vs hf':>7s}{'start s':>9s}{'reload s':>10s}")
    for r in rows:
        hf = next(h for h in rows if h["path"] == "hf" and h["shape"] == r["shape"])
        print(f"{r['path']:10s}{r['shape']:>10s}{r['seconds']:9.1f}{r['tokens']:8d}{r['tokens_per_s']:8.0f}"
              f"{r['tokens_per_s'] / hf['tokens_per_s']:7.2f}{r['startup_s']:9.1f}{r['reload_s']:10.2f}")
    if "vllm" in greedy_ids:
        same = sum(a == b for a, b in zip(greedy_ids["vllm"], greedy_ids["hf"]))
        rows.append({"path": "greedy agreement", "same": same, "of": len(all_prompts)})
        print(f"greedy (temperature 0, 64 tokens): vllm sampler = hf sampler on {same}/{len(all_prompts)} prompts")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="smollm2-135m", help="a conf/model name")
    ap.add_argument("--pairs", type=int, default=16)
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--batch-size", type=int, default=16, help="hf engine batch; the http server's --max-batch is 32")
    ap.add_argument("--concurrency", type=int, default=32, help="judge calls in flight for the HTTP paths")
    ap.add_argument("--port", type=int, default=8123)
    ap.add_argument("--skip", nargs="*", default=[], choices=PATHS)
    ap.add_argument("--workloads", nargs="+", default=list(WORKLOADS), choices=WORKLOADS)
    ap.add_argument("--cache-dir", default=os.environ.get("JUDGE_RL_CACHE", "~/.cache/judge_rl"))
    args = ap.parse_args()
    os.environ.setdefault("JUDGE_RL_ROOT", str(REPO))

    out = {}
    if importlib.util.find_spec("llama_cpp") is None:  # the issue's fourth path; `make install` does not install it
        print("llama.cpp (llama-cpp-python): not installed here, no row", flush=True)
    if "eval" in args.workloads:
        out["eval"] = eval_workload(args)
    if "policy" in args.workloads:
        out["policy"] = policy_workload(args)
    if "sampling" in args.workloads:
        out["sampling"] = sampling_workload(args)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
