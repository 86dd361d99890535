"""The memory plan: the expected peak of one training device, by component, before any model loads.

The failure users report most for GRPO on generative judges is running out of memory minutes into a launch. The plan
adds up what each phase of a step holds on one device, from the model's declared architecture (`model.arch`, the
published config.json) and the job's lengths and batch sizes, and refuses a config whose peak exceeds the device in one
line naming the biggest term and an override that fits.

Local backend (one process, judge_rl/backends/local/): float32 master weights, their gradients and AdamW's two
moments (4 + 4 + 8 bytes a parameter), a reference model in `model.dtype` where KL is on, a critic where PPO has one;
the rollout phase holds the sampler's KV cache (hf) or the colocated vLLM engine's share; the update phase holds one
micro-batch's activations (all layers, or the layer inputs alone with gradient checkpointing) and the logits of the
response positions over the whole vocabulary (the model's, a float32 copy, log-softmax and their gradient).
verl (FSDP over the job's GPUs, vLLM colocated, judge_rl/backends/verl/): the same terms sharded over the GPUs, the
rollout phase with vLLM's `gpu_memory_utilization` share and whatever actor and reference state is not offloaded, the
update phase with vLLM asleep (`free_cache_engine`) and the actor's state back on the device (verl loads offloaded
parameters and optimizer state for the update).
The log-prob phase between them holds the reference model and one micro-batch's logits without a graph. The peak is
the largest phase. The constants are checked against measured peaks (tests/backends/test_memory.py,
docs/scale.md); a plan is an estimate, within 20% where measured, not a guarantee.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Optional

from judge_rl.config import ArchConfig
from judge_rl.models.shape import EMBEDDED_VOCAB

GIB = 1024**3
# a step's phases: sampling, the old/reference log-probs, a micro-batch's forward and backward, the optimizer's step
PHASES = ("rollout", "logprob", "update", "step")
# what a process holds before any model: the CUDA context, cuBLAS/NCCL workspaces and allocator slack on a GPU; the
# interpreter with torch, transformers and TRL imported on a CPU (measured: docs/scale.md#the-memory-plan)
RUNTIME_BYTES = {"cuda": int(1.5 * GIB), "cpu": int(0.75 * GIB)}
# stored activations of one transformer layer per token, in elements of the compute dtype: the norms' inputs and
# outputs, q/k/v and the attention output, the residual stream, and the MLP's gate, up, activation and product
# (Korthikanti et al. 2022's count with SDPA, which keeps no score matrix, and a gated MLP)
ACT_HIDDEN, ACT_INTERMEDIATE = 10, 4


def parameter_count(a: ArchConfig) -> int:
    """Parameters of a decoder-only transformer of the declared architecture (Llama, Qwen2 with q/k/v biases, Qwen3
    with q/k norms)."""
    h, layers, inter = a.hidden_size, a.num_hidden_layers, a.intermediate_size
    hd = a.head_dim or h // a.num_attention_heads
    q, kv = a.num_attention_heads * hd, a.num_key_value_heads * hd
    attn = h * q + 2 * h * kv + q * h
    if a.model_type == "qwen2":
        attn += q + 2 * kv
    if a.model_type == "qwen3":
        attn += 2 * hd
    layer = attn + 3 * h * inter + 2 * h
    return a.vocab_size * h * (1 if a.tie_word_embeddings else 2) + layers * layer + h


def _bytes(dtype: str) -> int:
    return 4 if dtype == "float32" else 2


@dataclass
class Term:
    name: str
    bytes: int
    phase: str  # always, host (in host memory, not on the device), or the PHASES it is held in, joined by "+"
    note: str = ""


@dataclass
class MemoryPlan:
    backend: str
    device: str  # cuda | cpu
    terms: list[Term]
    capacity: Optional[int]  # bytes of one device (None: unknown here, e.g. a GPU job planned on a CPU)
    capacity_source: str = ""
    overrides: list[tuple[str, "MemoryPlan"]] = field(default_factory=list)

    def phase_terms(self, phase: str) -> list[Term]:
        return [t for t in self.terms if t.phase == "always" or phase in t.phase.split("+")]

    def phase_bytes(self, phase: str) -> int:
        return sum(t.bytes for t in self.phase_terms(phase))

    @property
    def peak_phase(self) -> str:
        return max(PHASES, key=self.phase_bytes)

    @property
    def peak(self) -> int:
        return self.phase_bytes(self.peak_phase)

    @property
    def fits(self) -> Optional[bool]:
        return None if self.capacity is None else self.peak <= self.capacity

    def biggest(self) -> Term:
        return max(self.phase_terms(self.peak_phase), key=lambda t: t.bytes)

    def line(self) -> str:
        """One line for a launch's log: the peak, the device, the three biggest terms."""
        top = sorted(self.phase_terms(self.peak_phase), key=lambda t: -t.bytes)[:3]
        cap = f" of {self.capacity / GIB:.1f} GiB ({self.capacity_source})" if self.capacity else ""
        return (f"memory plan ({self.backend}, one {self.device} device): peak {self.peak / GIB:.1f} GiB{cap} in the "
                f"{self.peak_phase} phase; biggest: " + ", ".join(f"{t.name} {t.bytes / GIB:.2f}" for t in top))

    def table(self) -> str:
        """Every term by phase, for --dry-run."""
        rows = [f"  {'component':<52} {'phase':<19} {'GiB':>8}  note"]
        for t in self.terms:
            rows.append(f"  {t.name:<52} {t.phase:<19} {t.bytes / GIB:>8.2f}  {t.note}")
        for phase in PHASES:
            rows.append(f"  {'= ' + phase + ' phase':<52} {'':<19} {self.phase_bytes(phase) / GIB:>8.2f}")
        cap = (f"{self.capacity / GIB:.1f} GiB ({self.capacity_source}): "
               + ("fits" if self.fits else "does NOT fit") if self.capacity else
               "device memory unknown here (cluster.gpu_memory_gib sets it)")
        return f"memory plan ({self.backend}, per {self.device} device), peak {self.peak / GIB:.2f} GiB; {cap}\n" + "\n".join(rows)

    def refusal(self) -> str:
        """The one-line error of a plan that does not fit: the biggest term and the first override that fits."""
        big = self.biggest()
        fixes = [o for o, p in self.overrides if p.fits]
        fix = (f"{fixes[0]} fits ({dict(self.overrides)[fixes[0]].peak / GIB:.1f} GiB)" if fixes else
               "no single override fits (" + ", ".join(o for o, _ in self.overrides) + " tried): use more GPUs "
               "(cluster=node_8gpu) or a smaller model")
        return (f"memory plan: model peak {self.peak / GIB:.1f} GiB exceeds the {self.device} device's "
                f"{self.capacity / GIB:.1f} GiB ({self.capacity_source}); biggest term: {big.name} "
                f"{big.bytes / GIB:.1f} GiB; {fix} (python -m judge_rl ... --dry-run prints the plan)")


@dataclass
class PlanInputs:
    """What the plan reads, from the job (`local_inputs`) or the translated verl config (`verl_inputs`)."""

    arch: ArchConfig
    dtype: str  # the compute dtype (model.dtype)
    prompt_len: int
    response_len: int
    sequences: int  # per step: prompts_per_step x rollout_n
    micro: int  # sequences per forward/backward
    reference: bool
    critic: bool
    gradient_checkpointing: bool
    rollout: str  # hf | vllm
    world: int = 1  # devices the FSDP state is sharded over
    vllm_share: float = 0.0  # vLLM's gpu_memory_utilization (verl, or the colocated sampler on a GPU)
    param_offload: bool = False
    optimizer_offload: bool = False
    ref_offload: bool = False
    free_cache_engine: bool = True
    host_offload: bool = False  # verl's fsdp_config.offload_policy (FSDP2 CPUOffloadPolicy)
    fused_optimizer: bool = False  # AdamW(fused=True): one CUDA kernel, no full-size temporaries
    tokens_per_micro: Optional[int] = None  # verl's dynamic batch: ppo_max_token_len_per_gpu
    logits_all_positions: bool = False  # verl computes the log-probs of every (unpadded) position


def _activations(p: PlanInputs, device: str) -> tuple[int, str]:
    a = p.arch
    tokens = p.tokens_per_micro or p.micro * (p.prompt_len + p.response_len)
    cb = _bytes(p.dtype)
    per_layer = tokens * (ACT_HIDDEN * a.hidden_size + ACT_INTERMEDIATE * a.intermediate_size) * cb
    if p.gradient_checkpointing:  # the layer inputs, and one layer recomputed in the backward
        return tokens * a.hidden_size * cb * a.num_hidden_layers + per_layer, f"{tokens} tokens, checkpointed"
    return per_layer * a.num_hidden_layers, f"{tokens} tokens a micro-batch, all {a.num_hidden_layers} layers"


def _logits(p: PlanInputs) -> tuple[int, str]:
    positions = (p.tokens_per_micro or p.micro * (p.prompt_len + p.response_len)) if p.logits_all_positions \
        else p.micro * (p.response_len + 1)
    return positions * p.arch.vocab_size * (_bytes(p.dtype) + 3 * 4), f"{positions} positions x {p.arch.vocab_size} vocabulary"


def plan_terms(p: PlanInputs, device: str, capacity: Optional[int]) -> list[Term]:
    n = parameter_count(p.arch)
    w = p.world
    sharded = f", 1/{w} each (FSDP)" if w > 1 else ""
    if p.host_offload:  # FSDP2's CPUOffloadPolicy: master weights, gradients and AdamW live and step on the host
        terms = [Term("parameters (fp32 master)", 4 * n // w, "host", f"{n / 1e9:.2f}B parameters{sharded}, host memory"),
                 Term("gradients (fp32)", 4 * n // w, "host", "host memory"),
                 Term("optimizer state (AdamW m, v fp32)", 8 * n // w, "host", "host memory, stepped on the CPU"),
                 Term("gathered parameters (bf16, two layers)", 2 * 2 * (n - p.arch.vocab_size * p.arch.hidden_size)
                      // p.arch.num_hidden_layers + 2 * p.arch.vocab_size * p.arch.hidden_size, "update",
                      "FSDP all-gathers a layer at a time (and the embedding)")]
    else:
        terms = [
            Term("parameters (fp32 master)", 4 * n // w, "logprob+update+step" if p.param_offload else "always",
                 f"{n / 1e9:.2f}B parameters{sharded}" + ("; on the host while vLLM rolls out" if p.param_offload else "")),
            Term("gradients (fp32)", 4 * n // w, "update+step"),
            Term("optimizer state (AdamW m, v fp32)", 8 * n // w, "update+step" if p.optimizer_offload else "always",
                 "on the host while vLLM rolls out" if p.optimizer_offload else ""),
        ]
        if not p.fused_optimizer:  # torch's AdamW (foreach) computes its denominators for every parameter at once
            terms.append(Term("optimizer step temporaries (fp32)", 4 * n // w, "step", "AdamW's foreach update, one fp32 copy"))
    act, note = _activations(p, device)
    terms.append(Term("activations" + (" (gradient checkpointing)" if p.gradient_checkpointing else ""), act, "update", note))
    logits, note = _logits(p)
    terms.append(Term("logits (model dtype, fp32 copy, log-softmax, grad)", logits, "update", note))
    terms.append(Term("log-prob pass logits (no grad)", logits * (_bytes(p.dtype) + 4) // (_bytes(p.dtype) + 12),
                      "logprob", "old and reference log-probs"))
    if p.reference:
        terms.append(Term(f"reference model ({p.dtype})", n * _bytes(p.dtype) // w, "logprob" if p.ref_offload else "always",
                          "on the host but for its log-probs" if p.ref_offload else ""))
    if p.critic:
        terms.append(Term("critic (weights, grads, AdamW)", 16 * n // w, "always", "its step's temporaries not counted"))
        terms.append(Term("critic activations", act, "update"))
    a = p.arch
    hd = a.head_dim or a.hidden_size // a.num_attention_heads
    if p.rollout == "vllm" and device == "cuda":
        share = int(p.vllm_share * capacity) if capacity else 0
        terms.append(Term(f"vLLM (gpu_memory_utilization {p.vllm_share})", share, "rollout" if p.free_cache_engine else "always",
                          "weights + KV cache; asleep in the update" if p.free_cache_engine else "weights + KV cache"))
        if w > 1 or p.param_offload:
            terms.append(Term("weight sync to vLLM (gathered bf16 layers)", min(2 * n, 2 * GIB), "rollout"))
    else:
        kv = p.sequences * (p.prompt_len + p.response_len) * a.num_hidden_layers * 2 * a.num_key_value_heads * hd * _bytes(p.dtype)
        label = "rollout KV cache (hf generate)" if p.rollout == "hf" else "vLLM KV cache and weights (CPU)"
        if p.rollout == "vllm":
            kv += n * 4
        terms.append(Term(label, kv, "rollout", f"{p.sequences} sequences x {p.prompt_len + p.response_len} tokens"))
    terms.append(Term("runtime (" + ("CUDA context, workspaces" if device == "cuda" else "Python, torch, libraries") + ")",
                      RUNTIME_BYTES[device], "always"))
    return terms


def make_plan(p: PlanInputs, backend: str, device: str, capacity: Optional[int], source: str,
              fixes: list[tuple[str, Callable[[PlanInputs], PlanInputs]]] = ()) -> MemoryPlan:  # fmt: skip
    plan = MemoryPlan(backend, device, plan_terms(p, device, capacity), capacity, source)
    if capacity and not plan.fits:
        for label, fix in fixes:
            changed = fix(copy.deepcopy(p))
            plan.overrides.append((label, MemoryPlan(backend, device, plan_terms(changed, device, capacity), capacity, source)))
        if not any(o.fits for _, o in plan.overrides):  # none alone: the first ones together, as few as fit
            combined, labels = copy.deepcopy(p), {}
            for label, fix in fixes:
                combined = fix(combined)
                labels[label.split("=")[0]] = label  # a later micro-batch size replaces an earlier one
                together = MemoryPlan(backend, device, plan_terms(combined, device, capacity), capacity, source)
                if together.fits:
                    plan.overrides.append((" ".join(labels.values()), together))
                    break
    return plan


def device_capacity(device: str, gpu_memory_gib: Optional[float]) -> tuple[Optional[int], str]:
    """One device's memory: `cluster.gpu_memory_gib` where set, else the visible GPU's, else (cpu) the machine's."""
    if device == "cuda":
        if gpu_memory_gib is not None:
            return int(gpu_memory_gib * GIB), "cluster.gpu_memory_gib"
        import torch

        if torch.cuda.is_available():
            props = torch.cuda.get_device_properties(0)
            return int(props.total_memory), props.name
        return None, "no GPU here"
    import os

    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"), "this machine's memory"


def planned_device(cluster) -> str:
    if cluster.device != "auto":
        return cluster.device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def _micro_fixes(p: PlanInputs, key: str) -> list[tuple[str, Callable[[PlanInputs], PlanInputs]]]:
    out, m = [], p.micro // 2
    while m >= 1:
        out.append((f"{key}={m}", lambda q, m=m: replace(q, micro=m)))
        m //= 2
    return out


def local_plan(job: Any, rollout_engine: str) -> Optional[MemoryPlan]:
    """The local backend's plan for `job` (the main or policy job) with its resolved rollout engine; None where the
    model's architecture is not declared (`plan_arch`)."""
    a, t = job.algorithm, job.trainer
    arch = plan_arch(job.model)
    if arch is None:
        return None
    device = planned_device(job.cluster)
    capacity, source = device_capacity(device, job.cluster.gpu_memory_gib)
    from judge_rl.rollouts.vllm_sampler import GPU_MEMORY_UTILIZATION

    p = PlanInputs(
        arch=arch, dtype=job.model.dtype, prompt_len=job.model.max_prompt_length, response_len=t.max_new_tokens,
        sequences=t.prompts_per_step * a.rollout_n, micro=a.ppo_micro_batch_size,
        reference=a.use_kl_loss or a.use_kl_in_reward, critic=a.critic.enabled,
        gradient_checkpointing=t.gradient_checkpointing, rollout=rollout_engine, vllm_share=GPU_MEMORY_UTILIZATION,
        free_cache_engine=False,  # the colocated sampler keeps its share through the update
    )  # fmt: skip
    fixes = []
    if p.dtype == "float32":
        fixes.append(("model.dtype=bfloat16", lambda q: replace(q, dtype="bfloat16")))
    if not p.gradient_checkpointing:
        fixes.append(("trainer.gradient_checkpointing=true", lambda q: replace(q, gradient_checkpointing=True)))
    if rollout_engine == "vllm" and device == "cuda":  # the colocated engine's share, for a KV cache the size of a step
        fixes.append(("trainer.rollout_engine=hf", lambda q: replace(q, rollout="hf")))
    fixes += _micro_fixes(p, "algorithm.ppo_micro_batch_size")
    return make_plan(p, "local", device, capacity, source, fixes)


def job_plan(job: Any) -> Optional[MemoryPlan]:
    """The local backend's plan of an online-RL job, the main or the policy job, with the rollout engine it will use;
    None for a verl job (planned from its translated config at launch), an offline method, or an architecture not
    declared."""
    from judge_rl.backends.algorithm import AlgorithmConfig
    from judge_rl.rollouts.samplers import resolve_rollout_engine

    if job.cluster.backend != "local" or not isinstance(job.algorithm, AlgorithmConfig):
        return None
    device = planned_device(job.cluster)
    return local_plan(job, resolve_rollout_engine(job.trainer.rollout_engine, device, job.model.source))


def verl_plan(cfg: Any, arch: ArchConfig, dtype: str, gpu_memory_gib: Optional[float]) -> MemoryPlan:
    """verl's plan per GPU from its translated `ppo_trainer` config (judge_rl/backends/verl/translate.py)."""
    from omegaconf import OmegaConf

    def get(key: str, default=None):
        return OmegaConf.select(cfg, key, default=default)

    actor, rollout = "actor_rollout_ref.actor", "actor_rollout_ref.rollout"
    device = "cpu" if get("trainer.device", "cuda") == "cpu" else "cuda"
    # on a CPU every rank shares the one machine: a per-device fit means nothing there
    capacity, source = device_capacity(device, gpu_memory_gib) if device == "cuda" else (None, "")
    world = int(get("trainer.n_gpus_per_node", 1)) * int(get("trainer.nnodes", 1))
    dynamic = bool(get(f"{actor}.use_dynamic_bsz", False))
    p = PlanInputs(
        arch=arch, dtype=dtype, prompt_len=int(get("data.max_prompt_length")), response_len=int(get("data.max_response_length")),
        sequences=int(get("data.train_batch_size")) * int(get(f"{rollout}.n", 1)) // world,
        micro=int(get(f"{actor}.ppo_micro_batch_size_per_gpu") or 1),
        reference=bool(get(f"{actor}.use_kl_loss", False) or get("algorithm.use_kl_in_reward", False)),
        critic=bool(get("critic.enable", False)), gradient_checkpointing=bool(get("actor_rollout_ref.model.enable_gradient_checkpointing", True)),
        rollout="vllm", world=world, vllm_share=float(get(f"{rollout}.gpu_memory_utilization", 0.5)),
        param_offload=bool(get(f"{actor}.fsdp_config.param_offload", False)),
        optimizer_offload=bool(get(f"{actor}.fsdp_config.optimizer_offload", False)),
        ref_offload=bool(get("actor_rollout_ref.ref.fsdp_config.param_offload", False)),
        host_offload=bool(get(f"{actor}.fsdp_config.offload_policy", False)) and get(f"{actor}.strategy") == "fsdp2",
        fused_optimizer=bool(get(f"{actor}.optim.override_optimizer_config.fused", False)),
        free_cache_engine=bool(get(f"{rollout}.free_cache_engine", True)),
        tokens_per_micro=int(get(f"{actor}.ppo_max_token_len_per_gpu")) if dynamic else None,
        logits_all_positions=True,
    )  # fmt: skip
    over = "+cluster.verl_overrides."
    fixes = [
        (f"{over}{rollout}.gpu_memory_utilization=0.4", lambda q: replace(q, vllm_share=min(q.vllm_share, 0.4))),
        (f"{over}{actor}.optim.override_optimizer_config.fused=true", lambda q: replace(q, fused_optimizer=True)),
        (f"{over}{actor}.fsdp_config.param_offload=true {over}{actor}.fsdp_config.optimizer_offload=true",
         lambda q: replace(q, param_offload=True, optimizer_offload=True)),
        (f"{over}{actor}.strategy=fsdp2 {over}{actor}.fsdp_config.offload_policy=true",
         lambda q: replace(q, host_offload=True)),
    ]
    if not p.gradient_checkpointing:
        fixes.append((f"{over}actor_rollout_ref.model.enable_gradient_checkpointing=true",
                      lambda q: replace(q, gradient_checkpointing=True)))
    if dynamic:
        fixes.append((f"{over}{actor}.ppo_max_token_len_per_gpu={p.tokens_per_micro // 2}",
                      lambda q: replace(q, tokens_per_micro=q.tokens_per_micro // 2)))
    else:
        fixes += _micro_fixes(p, "algorithm.ppo_micro_batch_size")
    return make_plan(p, "verl", device, capacity, source, fixes)


def check_plan(plan: MemoryPlan) -> None:
    """Refuse a plan that does not fit its device (one line: `MemoryPlan.refusal`); an unknown capacity passes."""
    if plan.fits is False:
        raise ValueError(plan.refusal())


def plan_arch(model: Any) -> Optional[ArchConfig]:
    """The architecture the plan sizes: the tiny random model's from `model.tiny` (with the embedded vocabulary), any
    other model's declared `model.arch`; None where a field the plan needs is not declared."""
    if model.source == "tiny_random" and model.weights != "random":
        t = model.tiny
        return ArchConfig(num_attention_heads=t.num_attention_heads, num_key_value_heads=t.num_key_value_heads,
                          num_hidden_layers=t.num_hidden_layers, hidden_size=t.hidden_size, model_type="llama",
                          intermediate_size=t.intermediate_size, vocab_size=EMBEDDED_VOCAB, tie_word_embeddings=True)
    a = model.arch
    needed = (a.hidden_size, a.intermediate_size, a.num_hidden_layers, a.num_attention_heads, a.num_key_value_heads,
              a.vocab_size, a.tie_word_embeddings)
    return None if any(v is None for v in needed) else a



def plan_record(plan: Optional[MemoryPlan]) -> Optional[dict]:
    """The plan as results.json and a dry run's return value hold it (GiB)."""
    if plan is None:
        return None
    return {"backend": plan.backend, "device": plan.device, "peak_gib": round(plan.peak / GIB, 3),
            "peak_phase": plan.peak_phase, "capacity_gib": round(plan.capacity / GIB, 1) if plan.capacity else None,
            "terms": {f"{t.name} [{t.phase}]": round(t.bytes / GIB, 4) for t in plan.terms}}
