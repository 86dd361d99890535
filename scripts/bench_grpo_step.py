"""Seconds per GRPO step: judge_rl's local backend against TRL's `GRPOTrainer`, in one process, on identical
settings, with the machine's raw forward/decode rates measured alongside.

    python scripts/bench_grpo_step.py                                         # 2 prompts x n 4, 64 new tokens
    python scripts/bench_grpo_step.py --prompts 8 --n 8 --max-new-tokens 128
    python scripts/bench_grpo_step.py --steps 3 --warmup 1 --only judge_rl    # one side only
    python scripts/bench_grpo_step.py --steps 1 --warmup 0                    # quickest end-to-end check
    python scripts/bench_grpo_step.py --rollout-engines hf                    # judge_rl's own sampler only
    python scripts/bench_grpo_step.py --device cuda                           # one CUDA GPU (fp32, both sides)
    python scripts/bench_grpo_step.py --logprob-pass padded shared_prefix     # judge_rl's two log-prob passes
    python scripts/bench_grpo_step.py --device cuda --trl-engines hf vllm     # TRL also with vLLM colocated (GPU)

Workload (the same on both sides): the embedded judge (SmolLM2-135M, fp32; `--model` any conf/model option, `--weights
random` its shape with random weights, `--dtype bfloat16` mixed precision on both sides, `--prompt-tokens N` judge
prompts padded to ~N tokens, `--gradient-checkpointing` on both sides), on `--device`:
cpu by default, or cuda, where TRL runs with use_cpu=False and every timer synchronizes the GPU first), its
tokenizer and chat template (eos <|im_end|>, pad <|endoftext|>, as judge_rl sets them); the strength reward's
judge prompt on synthetic train pairs, the prompts of step k drawn as `train_local` draws them (`step_items`);
`--n` samples per prompt at `--temperature`, top_p 1, at most `--max-new-tokens` new tokens; the reward is
judge_rl's `compute_score` (strength); GRPO advantages (group mean and std), clipped ratio (0.2), KL to a frozen
reference as a loss (low-variance "k3" estimator, coefficient `--beta`), token-mean loss aggregation; one
optimizer step per step (AdamW, constant `--lr`, weight decay 0.01, grad-norm clip 1.0), micro-batches of
`--micro-batch` sequences with gradient accumulation; no gradient checkpointing, no bf16; TRL
without vLLM by default (TRL 1.12, this project's pin, cannot import its vLLM client against the CPU's vLLM 0.31:
`without_vllm`); `--trl-engines vllm` runs TRL with vLLM colocated (`vllm_mode="colocate"`, on a GPU beside the
vLLM 0.24 that verl pins), recorded as an error line where it does not run.

  judge_rl  LocalBackend.step (as `train_local` builds it: load_model for policy and reference, the prompt's
            `messages`, `compute_score`), once per `--rollout-engines` (trainer.rollout_engine: hf = the policy
            samples itself, vllm = a vLLM engine colocated in this process, weights reloaded after each update;
            judge_rl/rollouts/samplers.py), and once per `--logprob-pass` (trainer.logprob_pass: padded, one forward
            per micro-batch; shared_prefix, a group's prompt once; auto, the backend's choice for the device: the
            name of a result says which ran, `judge_rl/<engine>/<pass>`, or `judge_rl/<engine>` for auto alone);
            seconds per step timed around `step()`; its split is the median of
            the metrics timing_s/gen (generation + scoring), timing_s/update_weights (the vLLM engine's reload),
            timing_s/ref, timing_s/old_log_prob, timing_s/update_actor.
  trl       GRPOTrainer.train() with the GRPOConfig below; seconds per optimizer step timed by a TrainerCallback
            (on_step_begin -> on_step_end: generation, reference log-probs, reward, loss, backward, optimizer;
            trainer setup excluded). Its split comes from timing wrappers around `_generate` (gen) and
            `_generate_and_score_completions` (gen + ref log-probs + reward + advantages); update = the rest.
  raw       the model alone, in this process (best of 3): prefill tokens/s of one unpadded no-grad forward over a
            ~400-token prompt; no-grad forward and forward+backward tokens/s of a (micro-batch x (prompt +
            max-new-tokens)) batch; decode steps/s (median step) of a plain KV-cache decode loop at the step's
            batch size (prompts x n) over a judge prompt.

Prints seconds per step (median of the `--steps` steps after `--warmup`), the ratio judge_rl/TRL, both splits,
generated tokens per step and completion lengths on each side (sampling differs, so lengths differ: the decode
loop runs as many steps as the longest completion), the raw rates, each side's step priced at the raw rates, and
a JSON line. Each step also records how many cores other processes kept busy meanwhile (/proc/stat): on a shared
machine a step with others > ~0.2 is not comparable (2 threads on 2 cores slow down several-fold when one core
is taken). Nothing is asserted: targets live here, not in the test suite.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gc
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from judge_rl.recipes.stages import training_items  # noqa: E402
from judge_rl.backends.algorithm import AlgorithmConfig  # noqa: E402
from judge_rl.config import ModelConfig, TrainerConfig  # noqa: E402
from judge_rl.data import load_dataset_pairs  # noqa: E402
from judge_rl.config.paths import load_model_config  # noqa: E402
from judge_rl.models.loading import load_model, load_tokenizer, mixed_precision, model_files  # noqa: E402
from judge_rl.backends.local.loop import checkpointed  # noqa: E402
from judge_rl.prompts import get_prompt  # noqa: E402
from judge_rl.rewards import build_reward, compute_score  # noqa: E402
from judge_rl.rollouts import build_sampler, encode_chat  # noqa: E402
from judge_rl.rollouts.vllm_engine import vllm_installed  # noqa: E402
from judge_rl.backends.local.backend import LocalBackend  # noqa: E402
from judge_rl.backends.local.loop import step_items  # noqa: E402
from judge_rl.updates.batch import resolve_logprob_pass  # noqa: E402

REWARD = "strength"
FILLER = " The judge reads this sentence, which pads its prompt to a fixed length."


class PaddedPrompt:
    """A judge prompt whose user message starts with filler sentences so that its chat-encoded length is about
    `tokens` (within one sentence): judge lengths (~1k tokens) from the synthetic pairs, the same messages on both
    sides (judge_rl's backend and TRL's dataset both call `messages`)."""

    def __init__(self, prompt, tokenizer, tokens: int):
        self.prompt, self.tokenizer, self.tokens = prompt, tokenizer, tokens
        self.per = len(tokenizer(FILLER, add_special_tokens=False).input_ids)

    def __getattr__(self, name):
        return getattr(self.prompt, name)

    def messages(self, item):
        msgs = [dict(m) for m in self.prompt.messages(item)]
        k = max(0, (self.tokens - len(encode_chat(self.tokenizer, msgs))) // self.per)
        user = next(i for i in range(len(msgs) - 1, -1, -1) if msgs[i]["role"] == "user")
        msgs[user]["content"] = FILLER.strip() + FILLER * (k - 1) + "\n\n" + msgs[user]["content"] if k else msgs[user]["content"]
        return msgs
SPLIT_KEYS = ("timing_s/gen", "timing_s/update_weights", "timing_s/ref", "timing_s/old_log_prob", "timing_s/update_actor")


def sync(device: torch.device) -> None:
    """Wait for the GPU's queued work before a timer reads the clock (CUDA launches return at once); a no-op on CPU."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def cuda_peak_mb(device: torch.device, reset: bool = False) -> float | None:
    """The CUDA allocator's peak since the last reset, in MiB (None on CPU); `reset` starts a new window."""
    if device.type != "cuda":
        return None
    if reset:
        torch.cuda.reset_peak_memory_stats(device)
        return None
    return torch.cuda.max_memory_allocated(device) / 2**20


def system_busy_seconds() -> float:
    """CPU seconds all processes have spent busy since boot (Linux /proc/stat; NaN elsewhere)."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return float("nan")
    user, nice, system, _idle, _iowait, irq, softirq, steal = (fields + [0] * 8)[:8]
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


class Usage:
    """Cores this process kept busy, and cores other processes kept busy, over an interval: the second says
    whether the machine was shared while a step ran (then its seconds are not comparable)."""

    def __init__(self):
        self.wall, self.own, self.all = time.perf_counter(), time.process_time(), system_busy_seconds()

    def done(self) -> dict[str, float]:
        wall = time.perf_counter() - self.wall
        own = time.process_time() - self.own
        return {"seconds": wall, "cores_self": own / wall,
                "cores_others": max(0.0, (system_busy_seconds() - self.all - own) / wall)}


def median(xs) -> float:
    xs = [x for x in xs if x == x]  # drop NaN
    return statistics.median(xs) if xs else float("nan")


# -- raw limits -------------------------------------------------------------------------------------
def tiled(ids: list[int], length: int) -> list[int]:
    return (ids * (length // len(ids) + 1))[:length]


@torch.no_grad()
def prefill_rate(model, ids: list[int], repeats: int = 3) -> float:
    """Tokens/s of one unpadded no-grad forward (no mask: SDPA's causal kernel), last position's logits only."""
    x = torch.tensor([ids], device=model.device)
    model(input_ids=x, use_cache=False, logits_to_keep=1)  # warm-up
    times = []
    for _ in range(repeats):
        sync(model.device)
        t = time.perf_counter()
        model(input_ids=x, use_cache=False, logits_to_keep=1)
        sync(model.device)
        times.append(time.perf_counter() - t)
    return len(ids) / min(times)  # a limit: the best of the repeats


@torch.no_grad()
def forward_rate(model, ids: list[int], rows: int, width: int, response: int, repeats: int = 3) -> float:
    """Tokens/s of a no-grad forward over `rows` x `width` tokens with logits for the last `response` + 1
    positions: a reference (or old) log-prob pass over one micro-batch."""
    x = torch.tensor([tiled(ids, width)] * rows, device=model.device)
    model(input_ids=x, use_cache=False, logits_to_keep=response + 1)  # warm-up
    times = []
    for _ in range(repeats):
        sync(model.device)
        t = time.perf_counter()
        model(input_ids=x, use_cache=False, logits_to_keep=response + 1)
        sync(model.device)
        times.append(time.perf_counter() - t)
    return rows * width / min(times)


def fwd_bwd_rate(model, ids: list[int], rows: int, width: int, response: int, repeats: int = 3) -> float:
    """Tokens/s of forward + backward over `rows` x `width` tokens, the log-prob of the last `response` tokens
    (logits kept for those positions only, as judge_rl's `response_log_probs` does)."""
    x = torch.tensor([tiled(ids, width)] * rows, device=model.device)
    target = x[:, -response:]

    def once() -> float:
        sync(model.device)
        t = time.perf_counter()
        logits = model(input_ids=x, use_cache=False, logits_to_keep=response + 1).logits[:, :response].float()
        logp = torch.log_softmax(logits, -1).gather(-1, target[..., None]).mean()
        logp.backward()
        sync(model.device)
        s = time.perf_counter() - t
        model.zero_grad(set_to_none=True)
        return s

    was_training = model.training
    model.train()
    once()  # warm-up
    s = min(once() for _ in range(repeats))  # a limit: the best of the repeats
    model.train(was_training)
    return rows * width / s


@torch.no_grad()
def decode_rate(model, ids: list[int], batch: int, steps: int) -> dict[str, float]:
    """Decode steps/s of a bare greedy KV-cache loop: `batch` copies of one prompt prefilled together, then
    `steps` one-token forwards over the batch (attention mask passed, as padded generation does), no stopping."""
    x = torch.tensor([ids] * batch, device=model.device)
    mask = torch.ones_like(x)
    out = model(input_ids=x, attention_mask=mask, use_cache=True)
    past, nxt = out.past_key_values, out.logits[:, -1].argmax(-1, keepdim=True)
    times = []
    for _ in range(steps):
        sync(model.device)
        t = time.perf_counter()
        mask = torch.cat([mask, torch.ones((batch, 1), dtype=mask.dtype, device=mask.device)], dim=1)
        out = model(input_ids=nxt, attention_mask=mask, past_key_values=past, use_cache=True)
        past, nxt = out.past_key_values, out.logits[:, -1].argmax(-1, keepdim=True)
        sync(model.device)
        times.append(time.perf_counter() - t)
    step_s = median(times)  # robust to a few steps slowed by other processes
    return {"steps_per_s": 1 / step_s, "tokens_per_s": batch / step_s, "batch": batch, "steps": steps,
            "context_start": len(ids), "total_s": sum(times)}


def raw_limits(args, cfg: ModelConfig, prompt_ids: list[int]) -> dict[str, object]:
    model = load_model(cfg, args.cache_dir, torch.device(args.device), seed=args.seed)
    batch = args.prompts * args.n
    micro = min(args.micro_batch, batch)
    width = len(prompt_ids) + args.max_new_tokens
    raw: dict[str, object] = {}
    usage = Usage()
    raw["prefill_tokens_per_s"] = prefill_rate(model, tiled(prompt_ids, args.raw_prompt_tokens))
    raw["prefill_prompt_tokens"] = args.raw_prompt_tokens
    print(f"raw: prefill {raw['prefill_tokens_per_s']:.0f} tok/s (one unpadded {args.raw_prompt_tokens}-token prompt, "
          "no grad)", flush=True)
    raw["forward_tokens_per_s"] = forward_rate(model, prompt_ids, micro, width, args.max_new_tokens)
    print(f"raw: batched forward {raw['forward_tokens_per_s']:.0f} tok/s (batch {micro} x {width} tokens, no grad, "
          f"logits for the last {args.max_new_tokens + 1})", flush=True)
    raw["fwd_bwd_tokens_per_s"] = fwd_bwd_rate(model, prompt_ids, micro, width, args.max_new_tokens)
    raw["fwd_bwd_shape"] = [micro, width]
    print(f"raw: forward+backward {raw['fwd_bwd_tokens_per_s']:.0f} tok/s (batch {micro} x {width} tokens, "
          f"logits for the last {args.max_new_tokens + 1})", flush=True)
    raw["decode"] = decode_rate(model, prompt_ids, batch, args.raw_decode_steps or args.max_new_tokens)
    d = raw["decode"]
    print(f"raw: decode {d['steps_per_s']:.2f} steps/s at batch {batch} = {d['tokens_per_s']:.0f} tok/s "
          f"({d['steps']} steps from a {d['context_start']}-token context)", flush=True)
    raw["cores_others"] = usage.done()["cores_others"]
    print(f"raw: other processes kept {raw['cores_others']:.1f} cores busy meanwhile", flush=True)
    del model
    gc.collect()
    return raw


# -- judge_rl ---------------------------------------------------------------------------------------
def run_judge_rl(args, cfg, tokenizer, prompt, score_fn, items, rollout_engine: str = "hf",
                 logprob_pass: str = "auto") -> dict[str, object]:
    # train_local's construction, with the benchmark's settings on judge_rl's own config fields; every other
    # field stays at its default (adv_estimator grpo with std normalisation, use_kl_loss with low_var_kl,
    # policy_loss vanilla with clip_ratio 0.2, loss_agg_mode token-mean, ppo_epochs 1, ppo_mini_batch_size None
    # = the whole batch in one optimizer step, entropy_coeff 0, grad_clip 1.0, weight_decay 0.01)
    algo = AlgorithmConfig(
        rollout_n=args.n,
        kl_loss_coef=args.beta,
        use_kl_loss=True,
        lr=args.lr,
        ppo_micro_batch_size=args.micro_batch,
    )
    trainer = TrainerConfig(
        total_steps=args.warmup + args.steps,
        prompts_per_step=args.prompts,
        max_new_tokens=args.max_new_tokens,
        temperature=args.temperature,
        top_p=1.0,
        logprob_pass=logprob_pass,
        gradient_checkpointing=args.gradient_checkpointing,
    )
    name = f"judge_rl/{rollout_engine}" + ("" if logprob_pass == "auto" else f"/{logprob_pass}")
    device = torch.device(args.device)
    cuda_peak_mb(device, reset=True)
    # as train_local: float32 weights that train, computing in model.dtype (mixed precision); the reference answers
    policy = mixed_precision(checkpointed(load_model(cfg, args.cache_dir, device, seed=args.seed, train=True), trainer),
                             cfg.dtype, device)
    reference = load_model(cfg, args.cache_dir, device, seed=args.seed)
    engine = LocalBackend(policy, reference, tokenizer, algo, trainer, prompt.messages, score_fn)
    if rollout_engine != "hf":
        t = time.perf_counter()
        engine.use_sampler(build_sampler(rollout_engine, policy, tokenizer))
        print(f"{name}: sampler ready in {time.perf_counter() - t:.1f} s (not in the step times)", flush=True)
    steps = []
    for step in range(1, args.warmup + args.steps + 1):
        torch.manual_seed(args.seed * 1_000_003 + step)  # as train_local seeds each step
        sync(device)
        usage = Usage()
        m = engine.step(step_items(items, step, args.prompts, args.seed))
        sync(device)
        u = usage.done()
        wall = u["seconds"]
        batch = args.prompts * args.n
        rec = {
            "step": step,
            "warmup": step <= args.warmup,
            "seconds": wall,
            "cores_self": u["cores_self"],
            "cores_others": u["cores_others"],
            **{k: float(m.get(k, float("nan"))) for k in SPLIT_KEYS},
            "sequences": batch,
            "mean_completion_length": float(m.get("response_length/mean", float("nan"))),
            "max_completion_length": float(m.get("response_length/max", float("nan"))),
            "clipped_ratio": float(m.get("response_length/clip_ratio", float("nan"))),
            "score_mean": float(m.get("critic/score/mean", float("nan"))),
        }
        rec["generated_tokens"] = rec["mean_completion_length"] * batch
        steps.append(rec)
        print(f"{name} step {step}{' (warm-up)' if rec['warmup'] else ''}: {wall:.1f} s  "
              + "  ".join(f"{k.split('/')[1]} {rec[k]:.1f}" for k in SPLIT_KEYS)
              + f"  tokens {rec['generated_tokens']:.0f} (mean len {rec['mean_completion_length']:.1f}, "
              f"max {rec['max_completion_length']:.0f})  cores busy: this {rec['cores_self']:.1f}, "
              f"others {rec['cores_others']:.1f}", flush=True)
    print(f"{name}: log-prob pass {resolve_logprob_pass(logprob_pass, device.type, args.gradient_checkpointing)}", flush=True)
    engine.close()
    peak = cuda_peak_mb(device)
    del engine, policy, reference
    gc.collect()
    out = summarize(steps)
    if peak is not None:
        out["cuda_peak_mb"] = peak  # policy, reference, optimizer and activations, this side alone
        print(f"{name}: CUDA peak allocated {peak:.0f} MiB", flush=True)
    return out


# -- TRL --------------------------------------------------------------------------------------------
@contextlib.contextmanager
def without_vllm():
    """Import TRL as on a machine without vLLM: TRL 1.12 imports its vLLM client whenever vllm is found, and that
    client needs names vLLM 0.31 (this machine's CPU build) no longer has, so `from trl import GRPOTrainer` fails.
    A `None` in sys.modules is Python's documented way to make a module unfindable (find_spec returns None); it
    is removed again afterwards, so judge_rl's vLLM sampler still imports vllm. The TRL side runs without vLLM
    (use_vllm=False) either way."""
    if "vllm" in sys.modules and sys.modules["vllm"] is not None:
        yield  # vllm already imported in this process: TRL would see it whatever we do
        return
    sys.modules["vllm"] = None  # type: ignore[assignment]
    try:
        yield
    finally:
        del sys.modules["vllm"]


def run_trl(args, cfg, tokenizer, prompt, score_fn, items, engine: str = "hf") -> dict[str, object]:
    """TRL's GRPOTrainer on the workload; `engine` "vllm": its rollouts from vLLM colocated in this process."""
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, TrainerCallback
    from transformers.trainer_callback import PrinterCallback, ProgressCallback
    with contextlib.nullcontext() if engine == "vllm" else without_vllm():
        from trl import GRPOConfig, GRPOTrainer

    total = args.warmup + args.steps
    batch = args.prompts * args.n
    micro = min(args.micro_batch, batch)
    if batch % micro:
        raise SystemExit(f"--prompts x --n = {batch} sequences must be a multiple of --micro-batch {micro}")
    accumulation = batch // micro

    # The same prompts, in the same order: step k's prompts are rows [(k-1)P, kP) of an unshuffled dataset.
    rows = []
    for step in range(1, total + 1):
        for item in step_items(items, step, args.prompts, args.seed):
            rows.append({
                "prompt": prompt.messages(item),  # conversational: TRL applies the tokenizer's chat template
                "ground_truth": json.dumps(item.ground_truth),
                "data_source": item.pair.source,
                "pair_id": item.pair.pair_id,
            })
    dataset = Dataset.from_list(rows)

    def judge_reward(prompts, completions, ground_truth, data_source, pair_id, **_):
        """judge_rl's compute_score under TRL's reward signature (one float per completion); the arguments are
        those LocalBackend.rollout passes."""
        out = []
        for c, gt, src, pid in zip(completions, ground_truth, data_source, pair_id):
            text = c[-1]["content"] if isinstance(c, list) else c
            out.append(float(score_fn(data_source=src, solution_str=text, ground_truth=json.loads(gt),
                                      extra_info={"pair_id": pid})["score"]))
        return out

    # A fresh copy of the same weights. "judge_rl": load_model, i.e. the same model object judge_rl trains
    # (GQA-aware SDPA on CPU, generation_config eos/pad set); "stock": transformers' own loading of the same
    # converted safetensors directory (stock SDPA): TRL out of the box. TRL builds its reference model itself
    # from model.config._name_or_path (that directory) with the policy's attention implementation.
    device = torch.device(args.device)
    if device.type == "cuda":
        torch.cuda.empty_cache()
    cuda_peak_mb(device, reset=True)
    if args.trl_attention == "judge_rl":
        model = load_model(cfg, args.cache_dir, device, seed=args.seed, train=True)
    else:
        model = AutoModelForCausalLM.from_pretrained(model_files(cfg, args.cache_dir), dtype=torch.float32)

    out_dir = tempfile.mkdtemp(prefix="bench_grpo_trl-")
    config = GRPOConfig(
        output_dir=out_dir,
        # -- schedule: one optimizer step per step, one generation batch per optimizer step ---------------
        max_steps=total,
        num_generations=args.n,  # = algorithm.rollout_n
        per_device_train_batch_size=micro,  # = algorithm.ppo_micro_batch_size (sequences per forward/backward)
        gradient_accumulation_steps=accumulation,  # micro-batches per optimizer step: P*n / micro
        # the generation batch is the whole step (P prompts x n): TRL derives steps_per_generation =
        # generation_batch_size / per_device_train_batch_size = gradient_accumulation_steps, so it generates once
        # per optimizer step and slices that batch into the micro-batches (setting both fields is refused)
        generation_batch_size=batch,
        num_iterations=1,  # = algorithm.ppo_epochs; with the steps aligned TRL skips old log-probs, as judge_rl does
        shuffle_dataset=False,  # the prompts in dataset order: the same prompts per step as judge_rl
        # -- sampling: transformers' generate with a dynamic KV cache, or vLLM colocated (--trl-engines vllm) ---
        use_vllm=engine == "vllm",
        vllm_mode="colocate",
        vllm_gpu_memory_utilization=0.3,  # the policy, its reference and the optimizer share the GPU with the engine
        use_transformers_continuous_batching=False,
        max_completion_length=args.max_new_tokens,  # = trainer.max_new_tokens
        temperature=args.temperature,  # = trainer.temperature (also divides the logits in the loss, as verl does)
        top_p=1.0,  # = trainer.top_p
        # judge_rl's sampler (rollouts.sample_generate) draws from the full softmax (no top_k, as verl's vLLM
        # rollout with top_k=-1); TRL's top_k=0 is the same (its default: off).
        top_k=args.trl_top_k,
        min_p=None,
        repetition_penalty=1.0,
        cache_implementation=None,
        # -- loss ------------------------------------------------------------------------------------------
        # loss_type "dapo" is verl's token-mean: the per-token losses summed over the whole accumulated batch
        # (all micro-batches of the optimizer step) divided by its number of completion tokens, exactly what
        # judge_rl's agg_loss(token-mean) with global_batch_info computes. (TRL's "grpo" is a per-sequence
        # mean then a mean over sequences = verl's seq-mean-token-mean; "bnpo" normalises per micro-batch.)
        # What differs: TRL divides advantages by (std + 1e-4), verl by (std + 1e-6); TRL adds the KL per token
        # before aggregating, verl aggregates it separately with the same mode (same sum); verl clamps the k3
        # KL to [-10, 10], TRL does not; verl's vanilla loss also has dual-clip (ratio capped at 3 for negative
        # advantages), inactive on-policy (ratio 1).
        loss_type="dapo",
        beta=args.beta,  # = algorithm.kl_loss_coef with use_kl_loss; TRL's KL is k3 = verl's low_var_kl
        use_bias_correction_kl=False,  # True (TRL's default) multiplies the KL by the ratio: verl does not
        epsilon=0.2,  # = algorithm.clip_ratio (low and high)
        epsilon_high=None,
        scale_rewards="group",  # = norm_adv_by_std_in_grpo
        importance_sampling_level="token",
        mask_truncated_completions=False,
        top_entropy_quantile=1.0,
        entropy_coef=0.0,  # = algorithm.entropy_coeff
        disable_dropout=True,  # SmolLM2 has no dropout; judge_rl never drops out either
        # -- optimizer: judge_rl's torch.optim.AdamW(lr, weight_decay) with clip_grad_norm_(grad_clip) ------
        learning_rate=args.lr,
        lr_scheduler_type="constant",
        warmup_steps=0,
        weight_decay=0.01,
        max_grad_norm=1.0,
        optim="adamw_torch",
        adam_beta1=0.9,
        adam_beta2=0.999,
        adam_epsilon=1e-8,
        # -- precision and device ----------------------------------------------------------------------------
        use_cpu=device.type == "cpu",  # cuda: the Trainer puts the model (and TRL its reference) on the GPU
        bf16=cfg.dtype == "bfloat16",  # --dtype: mixed precision on both sides (float32 weights, bf16 compute)
        fp16=False,
        gradient_checkpointing=args.gradient_checkpointing,  # TRL's default would be True; judge_rl's: off
        # -- bookkeeping -------------------------------------------------------------------------------------
        seed=args.seed,
        report_to="none",
        logging_steps=1,
        save_strategy="no",
        eval_strategy="no",
        log_completions=False,
        disable_tqdm=True,
        dataloader_num_workers=0,
    )

    class StepTimer(TrainerCallback):
        def __init__(self):
            self.usage: Usage | None = None
            self.steps: list[dict[str, float]] = []

        def on_step_begin(self, args, state, control, **kwargs):
            sync(device)
            self.usage = Usage()

        def on_step_end(self, args, state, control, **kwargs):
            sync(device)
            self.steps.append(self.usage.done())

    timer = StepTimer()
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[judge_reward],
        args=config,
        train_dataset=dataset,
        processing_class=tokenizer,
        callbacks=[timer],
    )
    for cb in (PrinterCallback, ProgressCallback):
        trainer.remove_callback(cb)

    # Fairness checks: TRL's prompt token ids are judge_rl's, and it stops on judge_rl's end token only.
    first = [r["prompt"] for r in rows[: args.prompts]]
    trl_ids, _, _ = trainer._tokenize_prompts(first)
    same_ids = [list(a) for a in trl_ids] == [encode_chat(tokenizer, m) for m in first]
    # TRL >= 1.13 keeps a list of end tokens; 1.12 (this project's pin, verl's value head) stops on the tokenizer's one
    eos_ids = list(getattr(trainer, "eos_token_ids", None) or [trainer.processing_class.eos_token_id])
    print(f"trl: prompt token ids identical to judge_rl's: {same_ids}; eos ids {eos_ids} "
          f"(judge_rl {tokenizer.eos_token_id}); pad {tokenizer.pad_token_id}; attention "
          f"{trainer.model.config._attn_implementation}; ref model "
          f"{'yes' if trainer.ref_model is not None else 'no'}; steps_per_generation {config.steps_per_generation}, "
          f"gradient_accumulation_steps {config.gradient_accumulation_steps}", flush=True)

    # Timing wrappers (instance attributes shadow the methods; TRL calls them through self).
    gens: list[dict[str, float]] = []
    inner_generate, inner_score = trainer._generate, trainer._generate_and_score_completions

    def timed_generate(prompts):
        t = time.perf_counter()
        out = inner_generate(prompts)
        completion_ids = out[1]
        eos_and_pad = set(eos_ids) | {tokenizer.pad_token_id}
        gens.append({
            "gen": time.perf_counter() - t,
            "prompts": len(prompts) / args.n,
            "lengths": [len(c) for c in completion_ids],
            "clipped": sum(1 for c in completion_ids if not c or c[-1] not in eos_and_pad),
        })
        return out

    def timed_score(inputs):
        t = time.perf_counter()
        out = inner_score(inputs)
        gens[-1]["gen_and_score"] = time.perf_counter() - t
        return out

    trainer._generate = timed_generate
    trainer._generate_and_score_completions = timed_score

    trainer.train()
    print(f"trl: torch threads after training {torch.get_num_threads()}", flush=True)
    shutil.rmtree(out_dir, ignore_errors=True)

    if len(gens) != len(timer.steps):
        print(f"[warning] trl generated {len(gens)} times in {len(timer.steps)} optimizer steps", flush=True)
    steps = []
    for step, (u, g) in enumerate(zip(timer.steps, gens), start=1):
        wall = u["seconds"]
        lengths = g["lengths"]
        rec = {
            "step": step,
            "warmup": step <= args.warmup,
            "seconds": wall,
            "cores_self": u["cores_self"],
            "cores_others": u["cores_others"],
            "gen": g["gen"],
            "ref_reward_adv": g["gen_and_score"] - g["gen"],
            "update": wall - g["gen_and_score"],
            "prompts": g["prompts"],
            "sequences": len(lengths),
            "generated_tokens": float(sum(lengths)),
            "mean_completion_length": sum(lengths) / len(lengths),
            "max_completion_length": float(max(lengths)),
            "clipped_ratio": g["clipped"] / len(lengths),
        }
        steps.append(rec)
        print(f"trl step {step}{' (warm-up)' if rec['warmup'] else ''}: {wall:.1f} s  gen {rec['gen']:.1f}  "
              f"ref+reward+adv {rec['ref_reward_adv']:.1f}  update {rec['update']:.1f}  prompts {rec['prompts']:.0f}  "
              f"tokens {rec['generated_tokens']:.0f} (mean len {rec['mean_completion_length']:.1f}, "
              f"max {rec['max_completion_length']:.0f})  cores busy: this {rec['cores_self']:.1f}, "
              f"others {rec['cores_others']:.1f}", flush=True)
    peak = cuda_peak_mb(device)
    del trainer, model
    gc.collect()
    out = summarize(steps)
    if peak is not None:
        out["cuda_peak_mb"] = peak  # policy, TRL's reference, optimizer and activations, this side alone
        print(f"trl: CUDA peak allocated {peak:.0f} MiB", flush=True)
    out["prompt_ids_identical"] = same_ids
    out["generations_per_step"] = len(gens) / max(1, len(timer.steps))
    return out


def summarize(steps: list[dict]) -> dict[str, object]:
    measured = [s for s in steps if not s["warmup"]] or steps
    keys = [k for k, v in measured[0].items() if isinstance(v, float) and k != "step"]
    return {"median": {k: median([s[k] for s in measured]) for k in keys}, "steps": steps}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--prompts", type=int, default=2, help="prompts per step (trainer.prompts_per_step)")
    ap.add_argument("--n", type=int, default=4, help="samples per prompt (rollout_n / num_generations)")
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--steps", type=int, default=3, help="measured steps per side")
    ap.add_argument("--warmup", type=int, default=1, help="steps run first and left out of the medians")
    ap.add_argument("--only", choices=("judge_rl", "trl"), default=None, help="run one side only")
    ap.add_argument("--rollout-engines", nargs="+", choices=("hf", "vllm"), default=None,
                    help="judge_rl's samplers to run (default: hf, and vllm where installed)")
    ap.add_argument("--logprob-pass", nargs="+", choices=("auto", "padded", "shared_prefix"), default=["auto"],
                    help="judge_rl's log-prob passes to run (trainer.logprob_pass; auto: the device's default)")
    ap.add_argument("--trl-engines", nargs="+", choices=("hf", "vllm"), default=["hf"],
                    help="TRL's generation: hf (transformers' generate) and/or vllm (colocated; needs a GPU)")
    ap.add_argument("--micro-batch", type=int, default=AlgorithmConfig().ppo_micro_batch_size,
                    help="sequences per forward/backward (ppo_micro_batch_size / per_device_train_batch_size)")
    ap.add_argument("--lr", type=float, default=AlgorithmConfig().lr)
    ap.add_argument("--beta", type=float, default=AlgorithmConfig().kl_loss_coef, help="KL loss coefficient")
    ap.add_argument("--temperature", type=float, default=TrainerConfig().temperature)
    ap.add_argument("--trl-top-k", type=int, default=0,
                    help="TRL's top_k (0: off, the full distribution judge_rl's sampler draws from)")
    ap.add_argument("--trl-attention", choices=("judge_rl", "stock"), default="judge_rl",
                    help="TRL's model: judge_rl's load_model (GQA-aware SDPA) or transformers' stock SDPA")
    ap.add_argument("--pairs", type=int, default=64, help="synthetic train pairs the steps draw from")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--raw-prompt-tokens", type=int, default=400, help="prompt length of the raw prefill rate")
    ap.add_argument("--raw-decode-steps", type=int, default=None, help="decode steps timed (default: max-new-tokens)")
    ap.add_argument("--skip-raw", action="store_true", help="skip the raw forward/decode rates")
    ap.add_argument("--cache-dir", default=os.environ.get("JUDGE_RL_CACHE", "~/.cache/judge_rl"))
    ap.add_argument("--model", default="smollm2-135m", help="a conf/model option (e.g. qwen2.5-1.5b-instruct)")
    ap.add_argument("--weights", choices=("pretrained", "random"), default="pretrained",
                    help="random: the model's shape with random weights (judge_rl/models/shape.py): speed and memory")
    ap.add_argument("--dtype", choices=("float32", "bfloat16"), default=None,
                    help="compute dtype on both sides (bfloat16: mixed precision, float32 weights); default: the model's")
    ap.add_argument("--prompt-tokens", type=int, default=0,
                    help="pad every judge prompt with filler sentences to about this many tokens (0: as they are)")
    ap.add_argument("--gradient-checkpointing", action="store_true", help="on both sides")
    ap.add_argument("--json", default=None, help="also write the results document to this file")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                    help="where both sides run (cuda: one GPU, fp32 as on CPU; TRL with use_cpu=False)")
    args = ap.parse_args()
    if args.n < 2:
        ap.error("--n must be >= 2 (GRPO needs a group; TRL refuses fewer)")
    if args.steps < 1 or args.warmup < 0:
        ap.error("--steps >= 1, --warmup >= 0")
    if args.device == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda: no CUDA device is visible")
    if "vllm" in args.trl_engines and args.device != "cuda":
        ap.error("--trl-engines vllm: TRL colocates vLLM on a GPU only (--device cuda)")
    if args.threads:
        torch.set_num_threads(args.threads)
    os.environ.setdefault("JUDGE_RL_ROOT", str(REPO))

    cfg = load_model_config(args.model)
    cfg.weights, cfg.dtype = args.weights, args.dtype or cfg.dtype
    tokenizer = load_tokenizer(cfg, args.cache_dir)
    prompt = get_prompt(build_reward(REWARD).prompt)
    if args.prompt_tokens:
        prompt = PaddedPrompt(prompt, tokenizer, args.prompt_tokens)
    score_fn = functools.partial(compute_score, reward_name=REWARD)
    pairs = load_dataset_pairs("synthetic", n=args.pairs, seed=args.seed, split="train")
    items = training_items(list(pairs), prompt, args.seed)
    step1 = [encode_chat(tokenizer, prompt.messages(it)) for it in step_items(items, 1, args.prompts, args.seed)]
    prompt_mean = sum(map(len, step1)) / len(step1)
    batch = args.prompts * args.n
    where = "CPU" if args.device == "cpu" else f"CUDA ({torch.cuda.get_device_name()})"
    print(f"model {cfg.name} ({cfg.weights} weights) {cfg.dtype} {where}, {torch.get_num_threads()} threads; {args.prompts} prompts x n {args.n} = "
          f"{batch} sequences a step, max_new_tokens {args.max_new_tokens}, micro-batch "
          f"{min(args.micro_batch, batch)}, temperature {args.temperature}, top_p 1, lr {args.lr}, beta {args.beta}; "
          f"{args.warmup} warm-up + {args.steps} measured steps; step-1 prompt tokens mean {prompt_mean:.0f}",
          flush=True)

    results: dict[str, object] = {"settings": {k: v for k, v in vars(args).items()}}
    results["settings"]["threads"] = torch.get_num_threads()
    if not args.skip_raw:
        results["raw"] = raw_limits(args, cfg, step1[0])
    engines = args.rollout_engines or (["hf", "vllm"] if vllm_installed() else ["hf"])
    # TRL before judge_rl's vLLM sampler: the colocated engine binds this process's threads and imports vllm for good
    # TRL with vLLM last of all: it imports vllm for good, after which TRL without it cannot be had in this process
    def ours(engine: str) -> None:
        for lp in args.logprob_pass if args.only in (None, "judge_rl") and engine in engines else []:
            key = f"judge_rl/{engine}" + ("" if lp == "auto" else f"/{lp}")
            results[key] = run_judge_rl(args, cfg, tokenizer, prompt, score_fn, items, engine, lp)

    def trl(engine: str) -> None:
        if args.only not in (None, "trl") or engine not in args.trl_engines:
            return
        key = "trl" if engine == "hf" else f"trl/{engine}"
        try:
            results[key] = run_trl(args, cfg, tokenizer, prompt, score_fn, items, engine)
        except Exception as e:  # noqa: BLE001 - TRL's pin against this vLLM: said, and the other sides still run
            if engine == "hf":
                raise
            results[f"{key}_error"] = f"{type(e).__name__}: {e}".splitlines()[0]
            print(f"{key}: did not run: {results[f'{key}_error']}", flush=True)

    ours("hf")
    trl("hf")
    ours("vllm")
    trl("vllm")

    print(f"\nmedian of {args.steps} step(s) after {args.warmup} warm-up, {batch} sequences a step:")
    print(f"{'':28s}{'s/step':>8s}{'gen':>8s}{'sync':>8s}{'ref':>8s}{'old_lp':>8s}{'update':>8s}"
          f"{'gen tok':>9s}{'mean len':>9s}{'max len':>8s}{'clipped':>8s}{'others':>8s}")
    rows = []
    ours_keys = [k for k in results if k.startswith("judge_rl/")]
    trl_keys = [k for k in ("trl", "trl/vllm") if k in results]
    for key in ours_keys:
        m = results[key]["median"]
        rows.append((key, m["seconds"], m["timing_s/gen"], m["timing_s/update_weights"], m["timing_s/ref"],
                     m["timing_s/old_log_prob"], m["timing_s/update_actor"], m))
    for key in trl_keys:
        m = results[key]["median"]
        rows.append((key, m["seconds"], m["gen"], float("nan"), m["ref_reward_adv"], float("nan"), m["update"], m))
    for name, s, gen, sync, ref, old, upd, m in rows:
        print(f"{name:28s}{s:8.2f}{gen:8.2f}{sync:8.2f}{ref:8.2f}{old:8.2f}{upd:8.2f}{m['generated_tokens']:9.0f}"
              f"{m['mean_completion_length']:9.1f}{m['max_completion_length']:8.0f}{m['clipped_ratio']:8.2f}"
              f"{m['cores_others']:8.1f}")
    print("  others = cores other processes kept busy during the step (median): above ~0.2 the machine was shared "
          "and the seconds are not comparable")
    if trl_keys:
        print("  trl: gen = _generate (tokenize, model.generate, decode); ref = the rest of "
              "_generate_and_score_completions (reference log-probs, reward, advantages); update = step - both")
    if ours_keys:
        print("  judge_rl: gen = timing_s/gen (generation + scoring); sync = timing_s/update_weights (vLLM's weight "
              "reload); update = timing_s/update_actor")
    for key in ours_keys if "trl" in results else []:
        j, t = results[key]["median"], results["trl"]["median"]
        results[f"ratio_{key}_over_trl"] = j["seconds"] / t["seconds"]
        per_tok = (j["seconds"] / j["generated_tokens"]) / (t["seconds"] / t["generated_tokens"])
        results[f"ratio_{key}_seconds_per_generated_token"] = per_tok
        print(f"ratio {key}/trl seconds per step: {results[f'ratio_{key}_over_trl']:.2f} "
              f"(per generated token: {per_tok:.2f}; decode steps run = longest completion: "
              f"{key} {j['max_completion_length']:.0f}, trl {t['max_completion_length']:.0f})")
    if ours_keys and trl_keys:  # the issue's target: each side with its fastest configuration that ran here
        best_ours = min(ours_keys, key=lambda k: results[k]["median"]["seconds"])
        best_trl = min(trl_keys, key=lambda k: results[k]["median"]["seconds"])
        results["ratio_best"] = {"judge_rl": best_ours, "trl": best_trl,
                                 "ratio": results[best_ours]["median"]["seconds"] / results[best_trl]["median"]["seconds"]}
        print(f"ratio best/best: {best_ours} over {best_trl} = {results['ratio_best']['ratio']:.2f}")
    if "raw" in results:
        raw = results["raw"]
        d = raw["decode"]
        print(f"raw: prefill {raw['prefill_tokens_per_s']:.0f} tok/s ({raw['prefill_prompt_tokens']} tokens, unpadded); "
              f"batched forward {raw['forward_tokens_per_s']:.0f} tok/s; forward+backward {raw['fwd_bwd_tokens_per_s']:.0f} tok/s (batch {raw['fwd_bwd_shape'][0]} x "
              f"{raw['fwd_bwd_shape'][1]}); decode {d['steps_per_s']:.2f} steps/s at batch {d['batch']} "
              f"({d['tokens_per_s']:.0f} tok/s)")
        for name, *_, m in rows:
            if name.endswith("/vllm"):  # its decode is vLLM's, not the raw loop's: pricing it at that rate says nothing
                continue
            # The step priced at the raw rates: each prompt prefilled once, the decode loop as long as the longest
            # completion at the full batch's speed, one no-grad reference forward and one forward+backward over
            # every sequence at the padded width. Indicative only: rows that finish early, the sampling and the
            # rest of the bookkeeping are ignored, and the raw rates are one measurement each.
            width = prompt_mean + m["max_completion_length"]
            prefill = args.prompts * prompt_mean / raw["prefill_tokens_per_s"]
            decode = m["max_completion_length"] / d["steps_per_s"]
            ref = batch * width / raw["forward_tokens_per_s"]
            train = batch * width / raw["fwd_bwd_tokens_per_s"]
            est = prefill + decode + ref + train
            results.setdefault("raw_estimate_s", {})[name] = {"total": est, "prefill": prefill, "decode": decode,
                                                              "ref": ref, "fwd_bwd": train}
            print(f"{name}'s step at the raw rates: {est:.2f} s (prefill {prefill:.2f}, decode {decode:.2f}, "
                  f"ref {ref:.2f}, fwd+bwd {train:.2f}); measured {m['seconds']:.2f} s = {m['seconds'] / est:.2f}x")
    print(json.dumps(results))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
