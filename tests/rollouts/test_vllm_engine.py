"""vLLM on this machine (judge_rl/rollouts/vllm_engine.py): which engine `auto` means, and its CPU settings."""

from __future__ import annotations

from judge_rl.rollouts import vllm_engine


# peak memory: 6.3 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
def test_server_auto_picks_vllm_where_it_can_run_and_hf_elsewhere(monkeypatch):
    monkeypatch.setattr(vllm_engine, "vllm_installed", lambda: True)
    monkeypatch.setattr(vllm_engine, "cuda_available", lambda: False)
    assert vllm_engine.auto_server("gguf_package", "auto") == "vllm"
    assert vllm_engine.auto_server("gguf_package", "cpu") == "vllm"
    assert vllm_engine.auto_server("gguf_package", "cuda") == "hf"  # asked for a GPU vLLM would not use
    assert vllm_engine.auto_server("tiny_random", "auto") == "hf"  # no weights on disk to serve
    monkeypatch.setattr(vllm_engine, "vllm_installed", lambda: False)
    assert vllm_engine.auto_server("gguf_package", "auto") == "hf"


# peak memory: 6.3 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
def test_the_cpu_kv_cache_is_set_unless_the_environment_sets_it():
    env = {}
    vllm_engine.cpu_environment(env)
    assert env == {"VLLM_CPU_KVCACHE_SPACE": "2"}
    env = {"VLLM_CPU_KVCACHE_SPACE": "6"}
    vllm_engine.cpu_environment(env)
    assert env == {"VLLM_CPU_KVCACHE_SPACE": "6"}  # the environment's own setting is kept
