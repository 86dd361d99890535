"""vLLM offline batched inference behind the server interface (GPU; `pip install judge_rl[gpu]`).

vLLM schedules every prompt of a `complete` call itself (continuous batching, paged KV cache), so the
harness hands it whole chunks. Greedy decoding (temperature 0) as the other servers. The import is
lazy: a CPU install never needs vllm, and `server=vllm` without it fails with one line saying what to
install.
"""

from __future__ import annotations

from pathlib import Path

from judge_rl.servers import SERVERS, Completion, stable_hash


def model_dir(model_cfg, cache_dir: str, checkpoint: str | None) -> str:
    """The weights vLLM should load: a checkpoint directory, the embedded model's converted copy, or
    the configured hub name / local path."""
    if checkpoint is not None:
        return str(checkpoint)
    if model_cfg.source == "gguf_package":
        from judge_rl.models.loading import converted_gguf_dir

        return str(converted_gguf_dir(model_cfg, cache_dir))
    if model_cfg.source == "tiny_random":
        raise ValueError("server=vllm cannot serve model.source=tiny_random (it has no weights on disk); use server=hf")
    return model_cfg.path


def weights_identity(path: str, cache_dir: str) -> str:
    """A content hash of a local model directory; a hub name stands for itself (its files are not here)."""
    if Path(path).expanduser().is_dir():
        from judge_rl.models.identity import directory_fingerprint

        return directory_fingerprint(path, cache_dir)
    return path


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
        try:
            from vllm import LLM
        except ImportError:
            raise ImportError("server=vllm needs vllm (a GPU extra): pip install 'judge_rl[gpu]', or use server=hf") from None
        path = model_dir(model_cfg, cache_dir, checkpoint)
        llm = LLM(
            model=path,
            dtype=model_cfg.dtype if model_cfg.dtype != "float32" else "auto",
            tensor_parallel_size=server_cfg.tensor_parallel_size,
            gpu_memory_utilization=server_cfg.gpu_memory_utilization,
            max_model_len=server_cfg.max_model_len,
            seed=seed,
        )
        return cls(llm, identity=f"vllm:{model_cfg.name}:{weights_identity(path, cache_dir)}")

    def __repr__(self) -> str:
        return f"VLLMServer({self.identity})"

    def request_key(self, messages: list[dict], max_new_tokens: int) -> str:
        prompt = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        return stable_hash({"engine": self.identity, "prompt": prompt, "max_new_tokens": max_new_tokens})

    def too_long(self, messages: list[dict], max_new_tokens: int) -> str | None:
        """Why this request cannot fit the served context (vLLM would reject it), or None when it fits."""
        if self.context_length is None:
            return None
        n = len(self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True))
        if n + max_new_tokens > self.context_length:
            return f"prompt of {n} tokens + max_new_tokens {max_new_tokens} > the model's context of {self.context_length}"
        return None

    def complete(self, batch_of_messages: list[list[dict]], *, max_new_tokens: int) -> list[Completion]:
        from vllm import SamplingParams

        params = SamplingParams(temperature=0.0, max_tokens=max_new_tokens)
        outputs = self.llm.chat(batch_of_messages, params, use_tqdm=False)
        results = []
        for out in outputs:
            choice = out.outputs[0]
            results.append(Completion(text=choice.text, error=None, finished=choice.finish_reason != "length"))
        return results
