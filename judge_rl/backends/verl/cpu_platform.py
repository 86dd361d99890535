"""verl's trainer on a machine without an accelerator: a `cpu` platform for verl's platform registry.

verl 0.9 resolves every device question (device name, collective backend, Ray resource, RNG, memory and
profiler calls) through `verl.plugin.platform.get_platform()`, and takes extra platforms from modules
named in `VERL_USE_EXTERNAL_MODULES`, imported by `import verl` in every process (driver and Ray
workers). `cluster=cpu_verl` (cluster.device=cpu) sets

    VERL_USE_EXTERNAL_MODULES=judge_rl.backends.verl.cpu_platform   VERL_PLATFORM=cpu

(launch.cpu_platform_env), so this module registers `PlatformCPU` before verl picks a platform. Nothing in verl
is edited or patched: the platform answers verl's questions for a CPU.

What the platform says, and why:
- device `cpu`, collective backend `gloo`; no-op synchronize / empty_cache / allocator / profiler calls.
- Ray resource `GPU`: verl sizes its resource pools and placement groups by GPU count (and its
  availability check reads only GPU/NPU, `verl/single_controller/ray/base.py:230`), so the driver
  starts Ray with `cluster.n_gpus_per_node` *logical* GPUs (`ray_kwargs.ray_init.num_gpus`); on this
  platform a "GPU" is one training-process slot, nothing more.
- No CUDA IPC: weights reach the rollout engine through verl's non-IPC path.

One workaround lives here, for one verl line: `verl/utils/distributed.py:89`
(`initialize_global_process_group_ray`) builds the backend string `cpu:gloo,{device}:{backend}`, which on
a CPU device is `cpu:gloo,cpu:gloo` and torch rejects it ("Duplicate device type cpu"). verl skips that
call when a default process group already exists, so `init_worker_process_group` creates it with plain
`gloo` first, from the RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT verl's Ray worker group put in the
worker's environment (`verl/single_controller/ray/base.py:633`). It runs at import in a verl worker
process and only there. The fix inside verl: use `get_nccl_backend()` alone when the device is cpu.
"""

from __future__ import annotations

import contextlib
import logging
import os
from types import ModuleType
from typing import Any, Optional

import torch

from verl.plugin.platform.platform_base import PlatformBase
from verl.plugin.platform.platform_manager import PlatformRegistry

PLATFORM = "cpu"

logger = logging.getLogger(__name__)


def _total_memory() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def _available_memory() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")


class _CPUDeviceModule(ModuleType):
    """`torch.cpu` with the `torch.cuda` calls verl makes on its device module (`get_torch_device()`):
    memory statistics (0: the CPU allocator keeps none; mem_get_info is the machine's free/total RAM),
    cache and IPC calls (no-ops), RNG state (torch's CPU generator) and device properties. Anything else
    is torch.cpu's own."""

    def __init__(self):
        super().__init__("judge_rl_cpu_device", self.__doc__)

    def __getattr__(self, name: str):
        return getattr(torch.cpu, name)

    def empty_cache(self) -> None: ...
    def ipc_collect(self) -> None: ...
    def reset_peak_memory_stats(self, device=None) -> None: ...
    def reset_accumulated_memory_stats(self, device=None) -> None: ...
    def set_per_process_memory_fraction(self, fraction, device=None) -> None: ...

    def memory_allocated(self, device=None) -> int:
        return 0

    memory_reserved = max_memory_allocated = max_memory_reserved = memory_allocated

    def mem_get_info(self, device=None) -> tuple[int, int]:
        return _available_memory(), _total_memory()

    def get_rng_state(self, device=None):
        return torch.get_rng_state()

    def set_rng_state(self, state, device=None) -> None:
        torch.set_rng_state(state)

    def manual_seed(self, seed: int) -> None:
        torch.manual_seed(seed)

    manual_seed_all = manual_seed

    def get_device_name(self, device=None) -> str:
        return "cpu"

    def get_device_properties(self, device=None):
        import types

        return types.SimpleNamespace(name="cpu", total_memory=_total_memory(), major=None, minor=None)


CPU_DEVICE_MODULE = _CPUDeviceModule()


@PlatformRegistry.register(platform=PLATFORM)
class PlatformCPU(PlatformBase):
    """verl's platform interface answered for the CPU (see the module docstring)."""

    @property
    def device_name(self) -> str:
        return "cpu"

    @property
    def vendor_name(self) -> str:
        return "cpu"

    @property
    def device_module(self) -> ModuleType:
        return CPU_DEVICE_MODULE

    def is_available(self) -> bool:
        return True

    def is_platform_available(self, use_smi_check: bool = False) -> bool:
        # never auto-detected: chosen only by VERL_PLATFORM=cpu, so a GPU machine that imports this module
        # keeps its own platform
        return False

    def current_device(self) -> str:
        # verl moves tensors with `.to(get_device_id())`; an int means "accelerator n" to torch, so this is
        # the device string, as `torch.cpu.current_device()` itself returns
        return "cpu"

    def device_count(self) -> int:
        return 1

    def set_device(self, device_index: int) -> None:
        return None

    def synchronize(self, device_index: Optional[int] = None) -> None:
        return None

    def manual_seed(self, seed: int) -> None:
        torch.manual_seed(seed)

    def manual_seed_all(self, seed: int) -> None:
        torch.manual_seed(seed)

    def set_allocator_settings(self, settings: str) -> None:
        return None

    def empty_cache(self) -> None:
        return None

    def get_device_capability(self, device_index: int = 0) -> tuple[Optional[int], Optional[int]]:
        return None, None

    def communication_backend_name(self) -> str:
        return "gloo"

    def visible_devices_envvar(self) -> str:
        # Ray sets it for actors holding logical GPUs; torch ignores it on a CPU build
        return "CUDA_VISIBLE_DEVICES"

    @contextlib.contextmanager
    def nvtx_range(self, msg: str):
        yield

    def profiler_start(self) -> None:
        return None

    def profiler_stop(self) -> None:
        return None

    def ray_resource_name(self) -> str:
        return "GPU"  # logical slots (module docstring)

    def ray_resource_options(self, num_gpus: float) -> dict[str, Any]:
        return {"num_gpus": num_gpus}

    def ray_noset_envvars(self) -> list[str]:
        return ["RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES"]

    def is_ipc_supported(self) -> bool:
        return False

    def cudart(self) -> Any:
        return None


def register_cpu_engines() -> None:
    """verl's FSDP training engines (actor/ref/critic) for device `cpu`: verl registers them for cuda and
    npu only (`verl/workers/engine/fsdp/transformer_impl.py:1143,1594`); the engine code itself is
    device-agnostic through the platform. Registered through `EngineRegistry.register`, once."""
    from verl.workers.engine import EngineRegistry
    from verl.workers.engine.fsdp.transformer_impl import FSDPEngineWithLMHead, FSDPEngineWithValueHead

    for model_type, engine in (("language_model", FSDPEngineWithLMHead), ("value_model", FSDPEngineWithValueHead)):
        for backend in ("fsdp", "fsdp2"):
            if PLATFORM not in EngineRegistry._engines.get(model_type, {}).get(backend, {}):
                EngineRegistry.register(model_type=model_type, backend=backend, device=PLATFORM)(engine)


def in_verl_worker(environ=os.environ) -> bool:
    """True in a process verl's Ray worker group started for a rank (its runtime env carries the rank's
    rendezvous), on this platform."""
    keys = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
    return environ.get("VERL_PLATFORM", "").strip().lower() == PLATFORM and all(environ.get(k) for k in keys)


def init_worker_process_group(environ=os.environ) -> bool:
    """Create the default process group with `gloo` in a verl worker on this platform (the module
    docstring says why); True when it did."""
    import torch.distributed as dist

    if not in_verl_worker(environ) or not dist.is_available() or dist.is_initialized():
        return False
    dist.init_process_group(backend="gloo", rank=int(environ["RANK"]), world_size=int(environ["WORLD_SIZE"]),
                            init_method=environ.get("DIST_INIT_METHOD") or None)
    return True


if os.environ.get("VERL_PLATFORM", "").strip().lower() == PLATFORM:
    register_cpu_engines()
    init_worker_process_group()
