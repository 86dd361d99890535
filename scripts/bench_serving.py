"""Judge serving paths side by side, in one run, on the same prompts and model (issue 24, item 1: judge evaluation).

    python scripts/bench_serving.py                          # embedded SmolLM2-135M fp32, 16 LLMBar pairs x 2 orders
    python scripts/bench_serving.py --skip vllm              # where vLLM's CPU build is not installed

Workload: the first `--pairs` LLMBar-Natural pairs (../shared/data) in both orders with the Think-J strength prompt,
greedy, `--max-new-tokens` at most: what `python -m judge_rl.eval` sends. Paths:
  hf        `server=hf`: HFServer in this process (the project's batched greedy engine)
  http      `server=openai` -> `python -m judge_rl.servers.http` in its own process (the project's OpenAI-compatible
            server, the policy job's `judge.engine=local`), through OpenAIServer (the client every judge call uses)
  vllm      `server=openai` -> vLLM's CPU build started as the policy job starts it (`judge.engine=vllm`,
            judge_rl/servers/endpoint.py: `vllm serve ... --dtype float32 --enforce-eager`), first call and warm
Each row: seconds for the whole workload, pairs/s, generated tokens/s, the server's start-up seconds (ready to
answer), its peak resident memory (VmHWM summed over the server's process tree; in-process: this process's), and how many outputs
equal the hf engine's. Ratios are against `hf`. Nothing is asserted: targets live here, not in the test suite. Run
it alone: a benchmark sharing the 2 cores is void.
"""

from __future__ import annotations

import argparse
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
from judge_rl.servers.http import load_model_config  # noqa: E402
from judge_rl.servers.openai import OpenAIServer  # noqa: E402

PATHS = ("hf", "http", "vllm")


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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="smollm2-135m", help="a conf/model name")
    ap.add_argument("--pairs", type=int, default=16)
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--batch-size", type=int, default=16, help="hf engine batch; the http server's --max-batch is 32")
    ap.add_argument("--concurrency", type=int, default=32, help="judge calls in flight for the HTTP paths")
    ap.add_argument("--port", type=int, default=8123)
    ap.add_argument("--skip", nargs="*", default=[], choices=PATHS)
    ap.add_argument("--cache-dir", default=os.environ.get("JUDGE_RL_CACHE", "~/.cache/judge_rl"))
    args = ap.parse_args()
    os.environ.setdefault("JUDGE_RL_ROOT", str(REPO))

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

    if "vllm" not in args.skip:
        judge = RewardJudgeConfig(engine="vllm", model=args.model, port=args.port + 1, startup_timeout_s=900.0)
        t = time.perf_counter()
        with judge_endpoint(judge, args.cache_dir, log_dir=tempfile.mkdtemp(prefix="bench_vllm_")) as endpoint:
            startup = time.perf_counter() - t
            client = OpenAIServer(endpoint.base_url, endpoint.model, concurrency=args.concurrency, timeout_s=600,
                                  max_retries=0)  # fmt: skip
            for label in ("vllm first call", "vllm warm"):
                seconds, outs = timed(client, messages, args.max_new_tokens)
                client._cache.clear()  # the warm call is sent again, not answered from the client's cache
                rows.append(row(label, seconds, outs, reference, tokenizer, n_pairs, startup,
                                peak_rss_mb(endpoint.process.pid if endpoint.process else None)))  # fmt: skip
                print(f"{label}: {seconds:.1f} s", flush=True)

    hf = next((r for r in rows if r["path"].startswith("hf")), None)
    print(f"\n{'path':26s}{'seconds':>9s}{'pairs/s':>9s}{'gen tok/s':>11s}{'vs hf':>7s}{'start s':>9s}"
          f"{'peak MB':>9s}{'same as hf':>12s}")
    for r in rows:
        ratio = f"{hf['seconds'] / r['seconds']:.2f}" if hf else "-"
        same = "-" if r["same_as_hf"] is None else f"{r['same_as_hf']}/{len(messages)}"
        peak = "-" if r["peak_mb"] is None else f"{r['peak_mb']:.0f}"
        start = "-" if r["startup_s"] is None else f"{r['startup_s']:.0f}"
        print(f"{r['path']:26s}{r['seconds']:9.1f}{r['pairs_per_s']:9.2f}{r['gen_tokens_per_s']:11.1f}{ratio:>7s}"
              f"{start:>9s}{peak:>9s}{same:>12s}" + (f"  ({r['failed']} failed)" if r["failed"] else ""))
    print(json.dumps({"rows": rows}))


if __name__ == "__main__":
    main()
