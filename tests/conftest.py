"""Shared test helpers: the repo's paths, the shared real data, and composing the app's config."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

REPO_ROOT = Path(__file__).resolve().parents[1]
CONF_DIR = REPO_ROOT / "conf"
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"
# Converted models and tokenizers are cached per user; tests share that cache (conversion is ~30 s).
os.environ.setdefault("JUDGE_RL_ROOT", str(REPO_ROOT))
CACHE_DIR = os.environ.get("JUDGE_RL_CACHE", str(Path.home() / ".cache" / "judge_rl"))
# an app started without hydra.run.dir writes its Hydra folder under outputs/ (multirun/ for a sweep) of its working
# directory: never the checkout's (conf/config.yaml reads these)
_SCRATCH = Path(tempfile.mkdtemp(prefix="judge_rl_tests_"))
os.environ.setdefault("JUDGE_RL_OUTPUTS", str(_SCRATCH / "outputs"))
os.environ.setdefault("JUDGE_RL_MULTIRUN", str(_SCRATCH / "multirun"))
# Under pytest-xdist the workers share the cores: torch's OpenMP pool (in a worker and in every app it starts) takes
# one thread per core by default, so 2 workers ran 4 threads on 2 cores, which wait for each other (measured: the
# judge_ladder smoke sweep 92 s alone, 415 s beside another worker). Each worker gets its share of the cores instead.
if os.environ.get("PYTEST_XDIST_WORKER"):
    _share = len(os.sched_getaffinity(0)) // int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, _share)))


# Tests that start verl's Ray jobs, vLLM engines or served judges (several GB each) run on one pytest-xdist worker, one
# after another; every other test goes to whichever worker is free. Measured: two verl jobs at once, or a verl job beside
# the vLLM tests, pushed this 24 GB machine past Ray's memory monitor (95%), which killed verl's vLLM servers (the job
# then waited in update_weights until the test's timeout). The largest verl job (the two-node test: 19.0 GB of processes)
# is marked `alone`: memory_gate below runs it with nothing beside it. (The policy job on verl was, at 17.8 GB; with
# 1 GiB of KV cache for its served judge it peaks at 15.7 GB and runs beside ordinary tests.)
ENGINE_TESTS = (
    "backends/test_verl_cpu.py::test_the_policy_job_on_verl_cpu",
    "backends/test_verl_two_nodes.py", "jobs/test_policy_vllm_judge.py", "rollouts/test_samplers.py",
    "rollouts/test_vllm_engine.py", "servers/test_vllm_endpoint.py", "servers/test_vllm_server.py",
    "recipes/test_stages.py", "test_embedded_model.py",
)  # fmt: skip


# Outside `make test-fast` (the `heavy` mark, given here): the engine tests, the `slow` and `alone` ones, and these,
# which train the embedded model (or a real architecture's shape), run whole sweeps and studies (each point in a
# process of its own), kill and resume training processes, or run verl's code in processes of their own. Seconds
# measured in `-m "not heavy"` runs on the 2-core AVX2-only machine, 2 workers (docs/performance.md#the-fast-lane): with
# all of these in, that lane took 15 min 20 s (1,839 tests); with all of them out, 8 min 26 s (1,787 tests).
HEAVY_TESTS = (
    "backends/test_memory.py::test_the_plan_is_within_20_percent_of_a_real_steps_peak_rss",  # 78 s: a GRPO step
    "jobs/test_submitit_launcher.py",  # 150 s: sweeps through submitit, each point trained in a process of its own
    "jobs/test_policy_judge_quality_study.py",  # 95 s: a judge ladder trained, then the policies it grades
    "test_report.py::test_every_sweep_runs_in_smoke_mode",  # ~100 s: every sweep of sweeps/, end to end
    "jobs/test_policy.py::test_judge_family_sweep_in_smoke_mode",  # 36 s: a sweep of policy jobs
    "test_kernel_cache.py",  # 36 s: torch.compile in processes of their own
    "models/test_shape.py::test_weights_are_drawn_once_per_seed_and_cached",  # 56 s: 151,936-token vocabularies
    "models/test_shape.py::test_a_run_on_random_weights_says_so",  # 33 s: a sweep on a real architecture's shape
    "test_report.py::test_a_real_multirun_writes_its_table",  # 24 s: a sweep, end to end
    # the app as a command, in processes of their own: each start is ~8 s of imports (tests/test_cli.py: 115 s)
    "test_cli.py",
    # kill and resume: training processes stopped by signals mid-step, then run again (66 s)
    "test_stopping.py", "test_app.py::test_killed_run_resumes_from_its_checkpoint",
    # verl's code in processes of its own: the app's dry runs and the launch's preflight probe (a fresh process that
    # imports verl and vLLM), verl's worker and platform in a child (245 s together, 5-30 s each)
    "backends/test_memory.py::test_a_7b_judge_without_offload_on_one_h200_is_refused_by_verls_plan",
    "backends/test_memory.py::test_the_scale_configs_pass_verls_checks_and_fit_their_gpus",
    "backends/test_verl_cpu.py::test_a_verl_worker_process_gets_a_gloo_process_group",
    "backends/test_verl_cpu.py::test_the_cpu_platform_answers_verls_device_questions_for_a_cpu",
    "backends/test_verl_cpu.py::test_cluster_cpu_verl_translates_to_a_cpu_job_verl_validates",
    "backends/test_verl_cpu.py::test_a_gpu_cluster_gets_none_of_the_cpu_settings",
    "backends/test_verl_launch.py::test_dry_run_flag_and_a_three_point_sweep_give_three_distinct_valid_jobs",
    "backends/test_verl_launch.py::test_verls_processes_die_with_the_job_kill_9_included",
    "backends/test_verl_preflight.py::test_a_gpu_option_launched_on_a_machine_without_cuda_fails",
    "backends/test_verl_preflight.py::test_a_launch_whose_environment_lacks_vllm_fails",
    "backends/test_verl_preflight.py::test_a_reward_file_that_loaded_is_not_loaded_again",
    "backends/test_verl_preflight.py::test_an_explicit_flash_attention_without_flash_attn_fails_the_launch",
    "backends/test_verl_preflight.py::test_the_reward_file_must_load_in_a_fresh_process",
    "policy/verl/test_launch.py::test_a_judge_the_job_starts_on_127_0_0_1_is_refused_on_two_nodes",
    "policy/verl/test_launch.py::test_node_8gpu_verif_with_a_vllm_judge_dry_run_validates_and_writes_no_key",
    "policy/verl/test_launch.py::test_the_dry_run_flag_prints_the_verl_command_and_config",
    "test_gpu_scripts.py::test_the_online_rows_pass_verls_own_config_checks_on_cpu",
    "test_gpu_scripts.py::test_the_verl_script_dry_run_passes_the_preflight_on_cpu",
)


def is_heavy(item) -> bool:
    """Whether `make test-fast` leaves the test out: it starts verl, Ray or vLLM, or trains the embedded model."""
    return (is_engine_test(item.nodeid) or item.nodeid.removeprefix("tests/").startswith(HEAVY_TESTS)
            or any(item.get_closest_marker(m) for m in ("slow", "alone")))


def pytest_collection_modifyitems(config, items):
    for item in items:
        if is_heavy(item):
            item.add_marker(pytest.mark.heavy)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """xdist's scope scheduler with one scope for the engine tests and one per test otherwise. (Not `xdist_group`
    marks: xdist 3.8 groups by rewriting `item._nodeid`, which pytest 9.2's nodeids no longer read, so marked tests
    spread over the workers and two verl jobs ran at once, killed by Ray's memory monitor.)"""
    from xdist.scheduler import LoadScopeScheduling

    class EngineTestsTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return "engines" if nodeid.removeprefix("tests/").startswith(ENGINE_TESTS) else nodeid

    return EngineTestsTogether(config, log)


# the folder of this test run's memory_gate locks: the controlling process's scratch folder, which pytest-xdist's
# workers (started after this module is imported) inherit
GATE_DIR = Path(os.environ.setdefault("JUDGE_RL_TEST_GATE_DIR", str(_SCRATCH)))


def release_memory() -> None:
    """Garbage collected, and the C heap's free pages returned to the system (glibc's malloc_trim): a pytest worker
    that has run hundreds of tests keeps freed memory otherwise, beside the two-node verl test (`alone`) that needs
    ~19.6 of a CI machine's 24.7 GB with the machine's own."""
    import ctypes
    import gc

    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


@contextlib.contextmanager
def memory_gate(alone: bool, lock_dir: Path | None):
    """A test marked `alone` runs with no test of another worker beside it, and the others share the machine: a shared
    lock for each test, an exclusive one for `alone` (fcntl locks on files in `lock_dir`, released by the kernel even
    if a worker dies). A turnstile lock taken first keeps a waiting `alone` test from being overtaken by the other
    worker's next tests. With no `lock_dir` (one process) it does nothing."""
    if lock_dir is None:
        yield
        return
    import fcntl

    with open(lock_dir / "door.lock", "a+") as door, open(lock_dir / "gate.lock", "a+") as gate:
        fcntl.flock(door, fcntl.LOCK_EX)
        try:
            mode = fcntl.LOCK_EX if alone else fcntl.LOCK_SH
            try:
                fcntl.flock(gate, mode | fcntl.LOCK_NB)
            except BlockingIOError:  # the other worker runs: an `alone` test, or this one waits to be alone
                release_memory()  # what this worker's heap keeps, handed back while it waits
                fcntl.flock(gate, mode)
        finally:
            fcntl.flock(door, fcntl.LOCK_UN)
        if alone:
            release_memory()
        try:
            yield
        finally:
            fcntl.flock(gate, fcntl.LOCK_UN)


def machine_used_gb() -> float:
    """The machine's memory in use (MemTotal - MemAvailable, GB): what Ray's memory monitor compares with its
    threshold (0.95 of MemTotal by default)."""
    info = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
    return (int(info["MemTotal"].split()[0]) - int(info["MemAvailable"].split()[0])) / 1e6


def machine_total_gb() -> float:
    info = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
    return int(info["MemTotal"].split()[0]) / 1e6


@contextlib.contextmanager
def peak_machine_memory(every_s: float = 0.5):
    """Yields a dict whose "gb" is, at the end, the most memory the machine had in use while the block ran (sampled
    every `every_s` by a thread: the engine tests' peaks last seconds)."""
    import threading

    peak, done = {"gb": machine_used_gb()}, threading.Event()

    def sample() -> None:
        while not done.wait(every_s):
            peak["gb"] = max(peak["gb"], machine_used_gb())

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield peak
    finally:
        done.set()
        thread.join()
        peak["gb"] = max(peak["gb"], machine_used_gb())


def is_engine_test(nodeid: str) -> bool:
    return nodeid.removeprefix("tests/").startswith(ENGINE_TESTS)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Setup, call and teardown of each test inside memory_gate, under pytest-xdist (the `alone` mark:
    pyproject.toml's markers). A heavy test (is_heavy: every test that starts verl, Ray or vLLM, or trains the
    embedded model) records the machine's peak memory in use while it ran, beside what the other worker ran meanwhile:
    the session's last lines list them (pytest_terminal_summary)."""
    alone = item.get_closest_marker("alone") is not None
    with memory_gate(alone, GATE_DIR if os.environ.get("PYTEST_XDIST_WORKER") else None):
        if is_heavy(item):
            with peak_machine_memory() as peak:
                item.stash[PEAK_KEY] = peak  # read into the teardown report (pytest_runtest_makereport)
                yield
        else:
            yield


PEAK_KEY = pytest.StashKey[dict]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A heavy test's teardown report carries the machine's peak memory so far (its user_properties: a report copies
    the item's when it is made, and pytest-xdist sends it to the controlling process)."""
    outcome = yield
    peak = item.stash.get(PEAK_KEY, None)
    if call.when == "teardown" and peak is not None:
        outcome.get_result().user_properties.append(("machine_peak_gb", round(max(peak["gb"], machine_used_gb()), 2)))


# Ray's memory monitor kills workers above this share of the machine's memory (RAY_memory_usage_threshold's default)
RAY_MEMORY_THRESHOLD = 0.95
# what an engine test must leave free below the machine's memory and below Ray's threshold (issue 54)
ENGINE_MEMORY_MARGIN_GB = 3.0
_HEAVY_PEAKS: dict[str, float] = {}


def pytest_runtest_logreport(report):
    """Each heavy test's peak machine memory (its user_properties, sent by pytest-xdist's workers too)."""
    for key, value in getattr(report, "user_properties", ()):
        if key == "machine_peak_gb":
            _HEAVY_PEAKS[report.nodeid] = max(value, _HEAVY_PEAKS.get(report.nodeid, 0.0))


def pytest_terminal_summary(terminalreporter):
    """The heavy tests' peak memory, highest first, against the machine and Ray's memory monitor: a CI log shows how
    near each came (a failure that depends on the machine shows it)."""
    if not _HEAVY_PEAKS:
        return
    total = machine_total_gb()
    ray_at = RAY_MEMORY_THRESHOLD * total
    terminalreporter.section("heavy tests: the machine's peak memory in use while each ran")
    terminalreporter.write_line(f"machine {total:.1f} GB; Ray's memory monitor at {RAY_MEMORY_THRESHOLD} = {ray_at:.1f} "
                                f"GB; the margin asked: {ENGINE_MEMORY_MARGIN_GB} GB below it")
    for nodeid, gb in sorted(_HEAVY_PEAKS.items(), key=lambda kv: -kv[1]):
        short = " (within the margin)" if gb > ray_at - ENGINE_MEMORY_MARGIN_GB else ""
        terminalreporter.write_line(f"{gb:6.2f} GB  {ray_at - gb:+6.2f} to Ray's threshold  {nodeid}{short}")


def pytest_sessionstart(session):
    """Tests that build vLLM engines in this process do not start through an app, which would remove compiled
    kernels a killed process left half-written (judge_rl/kernel_cache.py): remove them here once."""
    from judge_rl.kernel_cache import drop_truncated_kernels

    drop_truncated_kernels()


@contextlib.contextmanager
def litter_of_kills_removed(tmp_dir: Path):
    """Around a test that kills (or SIGTERMs) engines, jobs or training processes: the processes it starts get
    `tmp_dir` as their TMPDIR, removed afterwards with whatever they left in it; shared memory made since the test
    began that no live process maps is unlinked (vLLM's message queues, verl's weight bucket: judge_rl/shm.py; the job's
    own watchdogs do this too, but not before a test that failed first); kernels left half-written by a process
    killed while compiling are removed, so the tests after it do not load them. Every time, pass or fail."""
    import shutil
    import time

    from judge_rl.kernel_cache import drop_truncated_kernels
    from judge_rl.shm import remove_left_shm

    since, before = time.time() - 1, os.environ.get("TMPDIR")
    tmp_dir.mkdir(parents=True, exist_ok=True)
    os.environ["TMPDIR"] = str(tmp_dir)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = before
        remove_left_shm(since)
        shutil.rmtree(tmp_dir, ignore_errors=True)
        drop_truncated_kernels()


@pytest.fixture
def cleans_up_after_kills(tmp_path_factory):
    """litter_of_kills_removed around the test (a TMPDIR of its own under pytest's base temp folder)."""
    with litter_of_kills_removed(tmp_path_factory.mktemp("killed_tmp")):
        yield


def online_algorithms() -> list[str]:
    """The `algorithm=` options that train by online RL (recipe online_rl: the ones verl and the local backend
    run); the other methods are tested in tests/recipes/test_methods.py."""
    import yaml

    return sorted(p.stem for p in (CONF_DIR / "algorithm").glob("*.yaml")
                  if yaml.safe_load(p.read_text()).get("recipe") == "online_rl")


def compose_config(overrides: list[str]):
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(config_name="config", overrides=[f"cache_dir={CACHE_DIR}", *overrides])


def job_reward(job):
    """The job's reward, as judge_rl/jobs/train.py builds it once (`checked_job`) and hands down."""
    from judge_rl.rewards import build_reward

    return build_reward(job.reward.name, **job.reward.weights)


def run_dir_lock_free(run_dir: Path) -> bool:
    """Whether nothing holds the run directory's lock (judge_rl/rundir.py's `.lock`): taken and let go at once."""
    import fcntl

    with open(run_dir / ".lock", "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(f, fcntl.LOCK_UN)
        return True


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.exists():
        pytest.skip(f"real data folder {SHARED_DATA} is absent")
    return SHARED_DATA


# A 2-step tiny-random run: every stage, small enough for seconds.
# an app run in seconds: the tiny random model, the base evaluation of two pairs (tests of the command line and launchers)
QUICK = ["model=tiny-random", "logger=none", "stages=[eval_base]", "eval.limit=2", "eval.benchmarks=[]",
         "eval.max_new_tokens=4", f"cache_dir={CACHE_DIR}"]
TINY_RUN = [
    "model=tiny-random",
    "stages=[eval_base,sft,eval_sft,rl,eval_rl]",
    "logger=none",
    "trainer.total_steps=2",
    "trainer.save_every=1",
    "trainer.eval_every=0",
    "trainer.max_new_tokens=12",
    "trainer.prompts_per_step=2",
    "algorithm.rollout_n=2",
    "algorithm.ppo_micro_batch_size=2",
    "sft.num_examples=8",
    "sft.batch_size=4",
    "eval.max_new_tokens=12",
    "eval.limit=4",
    "eval.benchmark_limit=2",
    "data.train.kwargs.n=16",
]


@pytest.fixture(scope="session")
def smollm2_tokenizer_dir() -> str:
    """The embedded model's tokenizer files (from the GGUF package; no weights de-quantized), in the shared cache."""
    from judge_rl.config import ModelConfig
    from judge_rl.models.loading import tokenizer_dir

    return str(tokenizer_dir(ModelConfig(source="tiny_random", gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf"), CACHE_DIR))


def _checkout_outputs() -> set[Path]:
    return {p for name in ("outputs", "multirun") for p in (REPO_ROOT / name).glob("*/*")}


@pytest.fixture(scope="session", autouse=True)
def no_run_dirs_in_the_checkout():
    """No test leaves a run directory in the checkout's outputs/ or multirun/ (a CI run once left seven there)."""
    before = _checkout_outputs()
    yield
    added = sorted(_checkout_outputs() - before)
    assert not added, f"tests wrote into the checkout: {[str(p.relative_to(REPO_ROOT)) for p in added][:5]}"
