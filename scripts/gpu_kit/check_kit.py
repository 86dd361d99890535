"""Check the GPU kit and its verl profile on this CPU machine, as far as a machine without a GPU can.

    /root/.pyenv/versions/3.12.1/bin/python -m venv /tmp/bare      # once: a Python 3.12 with what the GPU machine has
    /tmp/bare/bin/pip install torch==2.11.0 "transformers==5.17.*" accelerate peft safetensors tokenizers
    python3 scripts/gpu_kit/check_kit.py --python /tmp/bare/bin/python3     # ~2 min, after both builds

1. Runs every command of gpu_kit_out/manifest.json, then of gpu_kit_out/verl/manifest.json, in order, from the repo
   root, with the given Python first on PATH as `python3` (the staging folders are the GPU machine's: /tmp/gpu_kit,
   /tmp/gpu_kit_verl): each part staged and verified, both kits installed, both smoke imports.
2. Before the verl kit's last call, puts a stub `libcuda.so.1` first on LD_LIBRARY_PATH: vLLM's CUDA extensions link
   the driver's library, which a machine without a GPU lacks. The stub defines the driver functions those extensions
   name (found with `nm -D`; each returns an error) and is built with `cc`; nothing calls it.
3. Imports the modules a verl job with vLLM rollouts loads on a GPU, in a process where vLLM's platform is its CUDA
   platform reporting an sm_90 device (Hopper), so module-level `if current_platform.is_cuda()` branches and the
   attention selector take the GPU's path; prints the attention backends vLLM would accept for bf16 and fp32, the
   sampler it builds, and which FlashAttention builds it finds.
4. Removes /tmp/gpu_kit and /tmp/gpu_kit_verl unless --keep (first_numbers.sh and verl_numbers.sh source their env.sh
   when present, which on this machine would put the CUDA kit in front of the project's venv).
No kernel runs: what this cannot show (a GPU, its driver, glibc, a C compiler for Triton) the first GPU call shows.
Exit status: 0 when every command and import passed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MANIFESTS = ("gpu_kit_out/manifest.json", "gpu_kit_out/verl/manifest.json")
STAGINGS = ("/tmp/gpu_kit", "/tmp/gpu_kit_verl")
VLLM_TARGET = Path("/tmp/gpu_kit_verl/site-packages/vllm")

CUDA_PATH = r'''
import importlib, sys
import torch
import vllm.platforms as P
from vllm.platforms.cuda import NonNvmlCudaPlatform
from vllm.platforms.interface import DeviceCapability

class Hopper(NonNvmlCudaPlatform):  # what vLLM's CUDA platform answers on an H100/H200
    @classmethod
    def get_device_capability(cls, device_id=0):
        return DeviceCapability(9, 0)

P.current_platform = Hopper()
MODULES = """
vllm.v1.attention.backends.flash_attn vllm.v1.attention.backends.triton_attn vllm.v1.attention.backends.flex_attention
vllm.v1.worker.gpu_worker vllm.v1.worker.gpu_model_runner vllm.model_executor.models.llama vllm.v1.sample.sampler
vllm.v1.sample.ops.topk_topp_sampler vllm.v1.engine.core vllm.v1.engine.async_llm vllm.v1.executor.multiproc_executor
vllm.v1.executor.uniproc_executor vllm.entrypoints.cli.main vllm.entrypoints.cli.serve vllm.entrypoints.cli.openai
vllm.entrypoints.cli.run_batch vllm.entrypoints.cli.collect_env vllm.entrypoints.cli.launch
vllm.entrypoints.cli.benchmark.main vllm.entrypoints.openai.api_server vllm.device_allocator.cumem
vllm.distributed.device_communicators.cuda_communicator vllm.model_executor.layers.rotary_embedding
vllm.model_executor.layers.layernorm vllm.model_executor.layers.activation
vllm.model_executor.model_loader.default_loader vllm.v1.structured_output verl.trainer.main_ppo
verl.workers.rollout.vllm_rollout.vllm_async_server
verl.workers.rollout.vllm_rollout.utils verl.workers.engine_workers verl.experimental.agent_loop
verl.experimental.reward_loop verl.model_merger verl.model_merger.fsdp_model_merger
verl.utils.checkpoint.fsdp_checkpoint_manager transfer_queue judge_rl.backends.verl.entry judge_rl.rollouts.vllm_sampler
judge_rl.servers.vllm
""".split()
failed = 0
for m in MODULES:
    try:
        importlib.import_module(m)
        print("ok  ", m)
    except Exception as e:
        failed += 1
        print("FAIL", m, "->", type(e).__name__, (str(e).splitlines() or [""])[0][:200])
from vllm.v1.attention.selector import AttentionSelectorConfig
fields = AttentionSelectorConfig._fields
for dtype in (torch.bfloat16, torch.float32):
    given = dict(head_size=64, dtype=dtype, kv_cache_dtype="auto", use_mla=False, has_sink=False, use_sparse=False,
                 use_mm_prefix=False, attn_type="decoder")
    cfg = AttentionSelectorConfig(**{k: given.get(k) for k in fields})
    valid, invalid = Hopper.get_valid_backends(DeviceCapability(9, 0), cfg)
    print(f"attention {dtype} (head size 64, sm_90): valid {[c.backend.name for c in valid]}; not "
          f"{ {b.name: r for b, (_, r) in invalid.items()} }")
from vllm.v1.sample.ops.topk_topp_sampler import TopKTopPSampler
print("sampler:", TopKTopPSampler().forward.__name__)
from vllm.vllm_flash_attn import flash_attn_interface as fa
print("FlashAttention in vLLM: FA2", fa.FA2_AVAILABLE, "| FA3", fa.FA3_AVAILABLE, "| FA4", fa.FA4_AVAILABLE)
print("failed:", failed)
sys.exit(1 if failed else 0)
'''


def libcuda_stub(vllm_dir: Path, dest: Path) -> int:
    """Build dest/libcuda.so.1 defining every driver function (cu[A-Z]*) vLLM's extensions leave undefined; returns
    how many."""
    names: set[str] = set()
    for so in vllm_dir.rglob("*.so"):
        out = subprocess.run(["nm", "-D", "--undefined-only", str(so)], capture_output=True, text=True).stdout
        names |= {line.split()[-1].split("@")[0] for line in out.splitlines() if re.search(r"\scu[A-Z]\w*(@|$)", line)}
    src = dest / "libcuda_stub.c"
    src.write_text("".join(f"int {n}(void) {{ return 999; }}\n" for n in sorted(names)))  # CUDA_ERROR_UNKNOWN
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(dest / "libcuda.so.1"), str(src)], check=True)
    return len(names)


def run(command: str, env: dict, tail: int = 12) -> int:
    t = time.monotonic()
    done = subprocess.run(["bash", "-c", command], cwd=REPO, env=env, capture_output=True, text=True)
    lines = [ln for ln in (done.stdout + done.stderr).splitlines() if not ln.startswith(("INFO", "WARNING", "W1"))]
    print(f"-- exit {done.returncode} in {time.monotonic() - t:.0f} s: {command[:160]}")
    print("\n".join(lines[-tail:]))
    return done.returncode


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--python", required=True, help="a Python 3.12 with what the GPU machine has (see above)")
    ap.add_argument("--keep", action="store_true", help="keep /tmp/gpu_kit and /tmp/gpu_kit_verl")
    args = ap.parse_args(argv)
    bindir = Path(args.python).parent
    if not (bindir / "python3").exists():
        ap.error(f"{bindir}/python3: missing (the manifests call python3)")
    for staging in STAGINGS:
        shutil.rmtree(staging, ignore_errors=True)
    stub = Path(tempfile.mkdtemp(prefix="libcuda-stub-"))
    env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}"}
    env.pop("PYTHONPATH", None)
    try:
        for name in MANIFESTS:
            commands = json.loads((REPO / name).read_text())["commands"]
            print(f"== {name}: {len(commands)} calls")
            for i, c in enumerate(commands):
                if name == MANIFESTS[-1] and i == len(commands) - 1:
                    # the last call installs and imports vLLM: its extensions need libcuda.so.1; build the stub from
                    # the wheel's files, staged but not yet installed, by installing first
                    stage, rest = c["command"].split(" && ", 1)
                    if run(stage, env) or run(rest.split(" && source")[0], env):
                        return 1
                    print(f"libcuda.so.1 stub: {libcuda_stub(VLLM_TARGET, stub)} driver functions")
                    env["LD_LIBRARY_PATH"] = f"{stub}:{env.get('LD_LIBRARY_PATH', '')}".rstrip(":")
                    if run("source " + rest.split(" && source ", 1)[1], env):
                        return 1
                elif run(c["command"], env):
                    return 1
        print("== vLLM's and verl's CUDA-path modules (vLLM's platform: CUDA, sm_90)")
        return run(f"source {STAGINGS[1]}/env.sh && python3 -c {sh_quote(CUDA_PATH)}", env, tail=80)
    finally:
        shutil.rmtree(stub, ignore_errors=True)
        if not args.keep:
            for staging in STAGINGS:
                shutil.rmtree(staging, ignore_errors=True)


def sh_quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"


if __name__ == "__main__":
    sys.exit(main())
