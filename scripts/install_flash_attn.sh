#!/usr/bin/env bash
# flash-attn for the GPU environment (environment.yml), built for the torch that verl[vllm]==0.9.1 pinned.
#
# verl 0.9.1 loads models with attn_implementation=flash_attention_2 and names flash-attn 2.8.3 as its
# version. `--no-build-isolation` makes flash-attn's setup see the installed torch: it downloads the
# prebuilt wheel for this torch / CUDA / C++ ABI when one is published and compiles against it otherwise
# (MAX_JOBS bounds the compiler's memory). Without flash-attn, judge_rl gives verl's actor and reference PyTorch's SDPA
# (judge_rl/models/attention.py); a critic (PPO) needs flash-attn all the same: verl 0.9.1 hard-codes it there.
set -euo pipefail
python - <<'PY'
import sys
import torch
if not torch.cuda.is_available():
    sys.exit("install_flash_attn.sh: no CUDA device visible; flash-attn is for the GPU environment only")
if not torch.__version__.startswith("2.11."):
    sys.exit(f"install_flash_attn.sh: torch {torch.__version__} is not the 2.11 that verl[vllm]==0.9.1 pins; "
             "create the environment from environment.yml first")
print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, C++11 ABI {torch._C._GLIBCXX_USE_CXX11_ABI}")
PY
pip install ninja packaging
MAX_JOBS="${MAX_JOBS:-8}" pip install "flash-attn==2.8.3" --no-build-isolation
python -c "import flash_attn, torch; print('flash-attn', flash_attn.__version__, 'for torch', torch.__version__)"
