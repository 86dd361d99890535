"""vLLM on this machine, shared by the colocated rollout engine (judge_rl/rollouts/vllm_sampler.py) and the judge
servers above (judge_rl/servers/vllm.py, judge_rl/servers/endpoint.py): whether vLLM is installed and a CUDA device is
visible, which engine `auto` means (`auto_server`: server=auto of the eval app, trainer.rollout_engine=auto on a CPU),
its settings on a CPU, and an offline engine built in this process and stopped now. Nothing here imports vllm or torch
at module level."""

from __future__ import annotations

import os

# vLLM on a CPU: the KV cache in GiB (VLLM_CPU_KVCACHE_SPACE, when the environment does not set it), and the context of
# the colocated rollout engine (judge_rl/rollouts/vllm_sampler.py) when none is configured
CPU_KVCACHE_SPACE_GIB = "2"
CPU_MAX_MODEL_LEN = 2048
# vLLM on a CPU reads `gpu_memory_utilization` as the share of host memory that must be free when it starts (the KV
# cache itself is VLLM_CPU_KVCACHE_SPACE): an engine in a process that already holds models (the eval app, a
# colocated sampler) cannot count on 85% of the machine being free. 0.3 (7 GiB of 24) covers weights and KV cache.
CPU_MEMORY_UTILIZATION = 0.3


def vllm_installed() -> bool:
    """Whether this Python can import vllm (looked up, not imported: importing it takes seconds)."""
    import importlib.util

    return importlib.util.find_spec("vllm") is not None


def auto_server(model_source: str, device: str) -> str:
    """What `server=auto` (the eval app's default) runs: vllm where vLLM is installed, the model has weights on
    disk (not the tiny random test model) and the device asked for is the one vLLM would use; hf otherwise.
    scripts/bench_serving.py measures why: on the embedded judge vLLM's engine is several times the hf engine's
    pairs/s with the same greedy verdicts."""
    if model_source == "tiny_random" or not vllm_installed():
        return "hf"
    if device != "auto" and (device == "cuda") != cuda_available():
        return "hf"
    return "vllm"


def cuda_available() -> bool:
    """Whether a CUDA device is visible (vLLM runs on the CPU otherwise)."""
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def cpu_environment(environ=os.environ) -> None:
    """VLLM_CPU_KVCACHE_SPACE (GiB) = CPU_KVCACHE_SPACE_GIB in `environ` unless it is set (vLLM's own
    default, 4 GiB, is more than a small judge needs on a shared machine)."""
    if not environ.get("VLLM_CPU_KVCACHE_SPACE"):
        environ["VLLM_CPU_KVCACHE_SPACE"] = CPU_KVCACHE_SPACE_GIB


def in_process_llm(**kwargs):
    """`vllm.LLM(**kwargs)` with its engine in this process (`VLLM_ENABLE_V1_MULTIPROCESSING=0` while it is built),
    not in a spawned engine process: on a CPU it starts in seconds (no second interpreter importing torch and vLLM,
    no model copy), and a colocated sampler can hand it the policy's weights by reference. vLLM's INFO lines and
    its CPU advice are quieted (VLLM_LOGGING_LEVEL=ERROR unless the environment sets a level)."""
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
    from vllm import LLM

    previous = os.environ.get("VLLM_ENABLE_V1_MULTIPROCESSING")
    os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
    try:
        return LLM(**kwargs)
    finally:
        if previous is None:
            os.environ.pop("VLLM_ENABLE_V1_MULTIPROCESSING", None)
        else:
            os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = previous


def shutdown_llm(llm) -> None:
    """Stop a `vllm.LLM`'s engine now (its KV cache is freed with it), not when the LLM is collected. Idempotent."""
    engine_core = getattr(getattr(llm, "llm_engine", None), "engine_core", None)
    shutdown = getattr(engine_core, "shutdown", None)
    if shutdown is not None:
        shutdown()
