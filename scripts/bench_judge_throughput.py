"""Judge throughput on this machine: the `hf` engine against a per-example `generate` loop and against
the raw batched forward-pass rate (the ceiling for any decoder written in PyTorch here).

    python scripts/bench_judge_throughput.py                      # embedded SmolLM2-135M, fp32, CPU
    python scripts/bench_judge_throughput.py --pairs 16 --max-new-tokens 64 --batch-size 16

Workload: the first `--pairs` LLMBar-Natural pairs (../shared/data), each in both orders with the
Think-J strength prompt, greedy, `--max-new-tokens` new tokens at most. Measurements:
  hf engine       HFServer.complete: `greedy_generate` (length-sorted batches; each prompt prefilled
                  alone, unpadded; batched decode over a left-padded KV cache; finished rows leave;
                  GQA-aware SDPA, judge_rl/models/attention.py)
  batched         `model.generate` on padded, length-sorted batches (the rollout path), GQA-aware SDPA
  stock           the same with transformers' own SDPA (KV heads copied per step under a padding mask):
                  what transformers does out of the box
  per-example     model.generate on one prompt at a time (the naive loop; the baseline)
  raw forward     a bare batched decode loop: prefill, then one forward pass per step over the batch
                  with the KV cache, argmax, no stopping; every row decodes max_new_tokens tokens
Prints pairs/s, generated tokens/s (end to end: prefill included; the raw loop also splits its prefill
and decode time) and the ratios hf/per-example and hf/raw-forward. Nothing is asserted: targets live here, not in the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from judge_rl.data.pairs import both_orders  # noqa: E402
from judge_rl.config.paths import load_benchmark_config  # noqa: E402
from judge_rl.evaluation.benchmarks import get_benchmark  # noqa: E402
from judge_rl.servers import HFServer  # noqa: E402
from judge_rl.config.paths import load_model_config  # noqa: E402
from judge_rl.models.attention import restore_sdpa, use_gqa_sdpa  # noqa: E402
from judge_rl.models.loading import load_model, load_tokenizer  # noqa: E402
from judge_rl.prompts import get_prompt  # noqa: E402
from judge_rl.rollouts import encode_chat, generate  # noqa: E402


def generated_tokens(tokenizer, texts: list[str]) -> int:
    return sum(len(tokenizer(t, add_special_tokens=False)["input_ids"]) + 1 for t in texts)  # +1: the end token


@torch.no_grad()
def raw_forward_rate(model, prompts: list[list[int]], pad_id: int, batch_size: int, steps: int) -> dict[str, float]:
    """Seconds (prefill and decode apart) and tokens for a bare greedy decode loop over length-sorted
    batches, every row decoding `steps` tokens."""
    order = sorted(prompts, key=len)
    prefill_s = decode_s = 0.0
    tokens = prefill_tokens = 0
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        width = max(map(len, chunk))
        ids = torch.full((len(chunk), width), pad_id)
        mask = torch.zeros((len(chunk), width), dtype=torch.long)
        for r, p in enumerate(chunk):
            ids[r, width - len(p) :] = torch.tensor(p)
            mask[r, width - len(p) :] = 1
        t = time.perf_counter()
        out = model(input_ids=ids, attention_mask=mask, use_cache=True)
        past, nxt = out.past_key_values, out.logits[:, -1].argmax(-1, keepdim=True)
        t_prefilled = time.perf_counter()
        for _ in range(steps - 1):
            mask = torch.cat([mask, torch.ones((len(chunk), 1), dtype=torch.long)], dim=1)
            out = model(input_ids=nxt, attention_mask=mask, past_key_values=past, use_cache=True)
            past, nxt = out.past_key_values, out.logits[:, -1].argmax(-1, keepdim=True)
        prefill_s += t_prefilled - t
        decode_s += time.perf_counter() - t_prefilled
        tokens += len(chunk) * steps
        prefill_tokens += sum(map(len, chunk))
    return {"seconds": prefill_s + decode_s, "tokens": tokens, "prefill_s": prefill_s, "decode_s": decode_s,
            "prefill_tokens_per_s": prefill_tokens / prefill_s,
            "decode_step_s": decode_s / max(1, (steps - 1) * -(-len(order) // batch_size))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="smollm2-135m", help="a conf/model name")
    ap.add_argument("--pairs", type=int, default=16)
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--cache-dir", default=os.environ.get("JUDGE_RL_CACHE", "~/.cache/judge_rl"))
    ap.add_argument("--skip-per-example", action="store_true", help="skip the slow per-example baseline")
    ap.add_argument("--skip-stock-attention", action="store_true", help="skip the hf engine with transformers' stock SDPA")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    os.environ.setdefault("JUDGE_RL_ROOT", str(REPO))

    cfg = load_model_config(args.model)
    tokenizer = load_tokenizer(cfg, args.cache_dir)
    model = load_model(cfg, args.cache_dir, torch.device("cpu"))
    spec = load_benchmark_config("llmbar_natural", limit=args.pairs)
    pairs = get_benchmark(spec.kind).load(spec).units
    prompt = get_prompt("strength")
    messages = [prompt.messages(item) for item in both_orders(pairs)]
    prompts = [encode_chat(tokenizer, m) for m in messages]
    n_pairs, n = len(pairs), len(prompts)
    print(f"model {cfg.name} fp32, {torch.get_num_threads()} threads; {n_pairs} pairs -> {n} prompts, "
          f"prompt tokens mean {sum(map(len, prompts)) / n:.0f}, max {max(map(len, prompts))}; "
          f"max_new_tokens {args.max_new_tokens}, batch {args.batch_size}", flush=True)

    results = {}
    engine = HFServer(model, tokenizer, args.batch_size)
    engine.complete(messages[:2], max_new_tokens=4)  # warm-up
    t = time.perf_counter()
    outs = engine.complete(messages, max_new_tokens=args.max_new_tokens)
    s = time.perf_counter() - t
    results["hf_engine"] = {"seconds": s, "tokens": generated_tokens(tokenizer, [o.text for o in outs])}
    print(f"hf engine: {s:.1f} s", flush=True)

    def batched_generate() -> dict[str, float]:
        t = time.perf_counter()
        gens = generate(model, tokenizer, prompts, max_new_tokens=args.max_new_tokens, batch_size=args.batch_size)
        s = time.perf_counter() - t
        same = sum(g.text == o.text for (g,), o in zip(gens, outs))
        return {"seconds": s, "tokens": generated_tokens(tokenizer, [g.text for (g,) in gens]), "same_as_hf_engine": same}

    results["batched_generate"] = batched_generate()
    print(f"batched generate: {results['batched_generate']['seconds']:.1f} s", flush=True)
    if not args.skip_stock_attention:
        restore_sdpa(model)  # transformers' own SDPA: KV heads copied to every query head under a padding mask
        results["batched_generate_stock_sdpa"] = batched_generate()
        print(f"batched generate, stock sdpa: {results['batched_generate_stock_sdpa']['seconds']:.1f} s", flush=True)
        use_gqa_sdpa(model)

    if not args.skip_per_example:
        t = time.perf_counter()
        texts = []
        with torch.no_grad():
            for p in prompts:
                out = model.generate(input_ids=torch.tensor([p]), attention_mask=torch.ones((1, len(p)), dtype=torch.long),
                                     max_new_tokens=args.max_new_tokens, do_sample=False, temperature=None, top_p=None,
                                     top_k=None, pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id)
                texts.append(tokenizer.decode(out[0, len(p):], skip_special_tokens=True))
        s = time.perf_counter() - t
        results["per_example_generate"] = {"seconds": s, "tokens": generated_tokens(tokenizer, texts)}
        print(f"per-example generate: {s:.1f} s", flush=True)

    results["raw_forward"] = raw_forward_rate(model, prompts, tokenizer.pad_token_id, args.batch_size, args.max_new_tokens)
    raw = results["raw_forward"]
    print(f"raw forward: prefill {raw['prefill_s']:.1f} s ({raw['prefill_tokens_per_s']:.0f} prompt tok/s), "
          f"decode {raw['decode_s']:.1f} s ({raw['decode_step_s']:.3f} s a step at batch {args.batch_size})")

    print(f"\n{'':22s}{'seconds':>9s}{'pairs/s':>9s}{'gen tok/s':>14s}")
    for name, r in results.items():
        r["pairs_per_s"] = n_pairs / r["seconds"]
        r["decode_tokens_per_s"] = r["tokens"] / r["seconds"]
        print(f"{name:22s}{r['seconds']:9.1f}{r['pairs_per_s']:9.3f}{r['decode_tokens_per_s']:14.1f}")
    hf = results["hf_engine"]
    ratios = {}
    if "per_example_generate" in results:
        ratios["hf_vs_per_example_pairs_per_s"] = hf["pairs_per_s"] / results["per_example_generate"]["pairs_per_s"]
        ratios["hf_vs_per_example_tokens_per_s"] = hf["decode_tokens_per_s"] / results["per_example_generate"]["decode_tokens_per_s"]
    ratios["hf_vs_batched_generate_pairs_per_s"] = hf["pairs_per_s"] / results["batched_generate"]["pairs_per_s"]
    if "batched_generate_stock_sdpa" in results:
        ratios["hf_vs_stock_transformers_batched_pairs_per_s"] = (
            hf["pairs_per_s"] / results["batched_generate_stock_sdpa"]["pairs_per_s"]
        )
    ratios["hf_vs_raw_forward_tokens_per_s"] = hf["decode_tokens_per_s"] / results["raw_forward"]["decode_tokens_per_s"]
    for k, v in ratios.items():
        print(f"ratio {k}: {v:.2f}")
    print(json.dumps({"results": results, "ratios": ratios}))


if __name__ == "__main__":
    main()
