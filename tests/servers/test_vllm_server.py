"""The vLLM server on a CPU install: which weights it would load, and a one-line error without vllm."""

from __future__ import annotations

import importlib.util

import pytest

from judge_rl.config import ServerConfig, ModelConfig
from judge_rl.servers import SERVERS, VLLMServer, build_server
from judge_rl.servers.vllm import model_dir


def test_model_dir_resolution(tmp_path):
    assert model_dir(ModelConfig(source="hub", path="Qwen/Qwen2.5-7B-Instruct"), str(tmp_path), None) == "Qwen/Qwen2.5-7B-Instruct"
    assert model_dir(ModelConfig(), str(tmp_path), "/ckpt/model") == "/ckpt/model"
    with pytest.raises(ValueError, match="tiny_random"):
        model_dir(ModelConfig(source="tiny_random"), str(tmp_path), None)
    assert SERVERS.get("vllm") is VLLMServer


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed here")
def test_missing_vllm_is_one_clear_line(tmp_path):
    with pytest.raises(ImportError, match=r"server=vllm needs vllm .*pip install 'judge_rl\[gpu\]'"):
        build_server(ServerConfig(name="vllm"), ModelConfig(source="hub", path="x/y"), str(tmp_path))
