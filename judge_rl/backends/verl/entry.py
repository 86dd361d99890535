"""`python -m judge_rl.backends.verl.entry <ppo_trainer.yaml>`: one verl training job in its own process.

Loads the translated config judge_rl wrote, adds the non-secret W&B / verl settings present in this process's
environment to Ray's runtime environment (in memory only: never written back), and hands the config to verl's own
`main_ppo.main`, which validates it and runs the Ray trainer.

A secret (an API key or token: `launch.is_secret`) never goes into the runtime environment: verl prints it (`ray init
kwargs`, its whole config in every worker's log), Ray's runtime-env agent logs it and verl's W&B run saves the config.
The Ray this process starts (no cluster.ray_address) inherits this process's environment, its workers with it, so
they read the key from there. On an existing cluster the workers read it from their node's environment: start each
node with it (`WANDB_API_KEY=... ray start ...`); this process names the secrets it does not forward.

A Ray node lost mid-job ends it in one line (NodeWatch): the line goes to <config dir>/failure.txt, which the job
reads, and so does the last line of any other exception verl raised.

This process leads its own process group (launch.py starts it in a new session), which verl's Ray processes and
vLLM's engines join: the job that launched it stops the group when it ends, and a watchdog does when it is killed.
"""

from __future__ import annotations

import os
import re
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Mapping

from omegaconf import OmegaConf, open_dict

from judge_rl.backends.verl.launch import EXTRA_FORWARDED_ENV, FAILURE_FILE, FORWARDED_ENV, NODE_LOST_EXIT, is_secret

NODE_POLL_S = 2.0  # how often NodeWatch asks Ray for its nodes
NODE_DEAD_WAIT_S = 60.0  # after verl raised: how long Ray may take to mark a lost node dead (its health checks)


def forwarded_names(environ: Mapping[str, str]) -> tuple[str, ...]:
    """FORWARDED_ENV and the names in `environ[EXTRA_FORWARDED_ENV]` (comma-separated), in order, once each."""
    extra = (n.strip() for n in environ.get(EXTRA_FORWARDED_ENV, "").split(",") if n.strip())
    return tuple(dict.fromkeys((*FORWARDED_ENV, *extra)))


def withheld_secrets(environ: Mapping[str, str]) -> list[str]:
    """The forwarded names that are set in `environ` and are secrets: never put in Ray's runtime env."""
    return [k for k in forwarded_names(environ) if environ.get(k) and is_secret(k)]


def with_forwarded_env(cfg, environ: Mapping[str, str]):
    """The config with the non-secret variables of `environ` named by `forwarded_names` added to Ray's runtime env
    (in memory). Secrets are left out: Ray's workers inherit them from the Ray this process starts, or read them
    from their node's environment on an existing cluster (module docstring)."""
    env = {k: environ[k] for k in forwarded_names(environ) if environ.get(k) and not is_secret(k)}
    if env:
        with open_dict(cfg):
            runtime = cfg.ray_kwargs.ray_init
            if runtime.get("runtime_env") is None:
                runtime.runtime_env = {}
            if runtime.runtime_env.get("env_vars") is None:
                runtime.runtime_env.env_vars = {}
            runtime.runtime_env.env_vars.update(env)
    return cfg


def cluster_note(environ: Mapping[str, str]) -> str | None:
    """On an existing Ray cluster (RAY_ADDRESS), the line naming the secrets set here that its workers must read from
    their node's environment; None when this process starts its own Ray (its workers inherit them)."""
    withheld = withheld_secrets(environ)
    if not withheld or not environ.get("RAY_ADDRESS"):
        return None
    return (f"judge_rl: {', '.join(withheld)} not forwarded to the Ray cluster at {environ['RAY_ADDRESS']} (a secret "
            "never goes into Ray's runtime env, which verl and Ray log): its workers read them from their node's "
            "environment; start each node with them set (`WANDB_API_KEY=... ray start ...`)")


ANSI = re.compile(r"\x1b\[[0-9;]*m")


# Ray Client's proxy forks the server of each client from a process whose gRPC threads are busy; now and then the
# child dies at once (ray-project/ray#63202; 4 of 32 connections to a fresh head here, 0 of 60 with the workaround).
# Nothing has run then and Ray is not initialized: connecting again in the same process works (seen here), so the
# job does, RAY_CLIENT_RETRIES times, before it fails in one line.
RAY_CLIENT_LOST = ("Ray Client's proxy lost the server it started for this job (a Ray race, ray-project/ray#63202): "
                   "nothing ran, the same command again connects; GRPC_ENABLE_FORK_SUPPORT=false in the environment of "
                   "the head's `ray start` avoids it")
RAY_CLIENT_RETRIES = 3


def ray_client_lost(err: BaseException) -> bool:
    """Whether `err` is ray.init through Ray Client failing because the proxy lost the job's server (RAY_CLIENT_LOST)."""
    return isinstance(err, ConnectionAbortedError) and str(err).startswith("Initialization failure from server")


def run_connecting_again(run: Callable[[], None], retries: int = RAY_CLIENT_RETRIES) -> None:
    """`run()`, called again up to `retries` times while it fails to connect through Ray Client before Ray is
    initialized (ray_client_lost), each time with a line saying so; any other failure, or the last, is raised."""
    import ray

    for attempt in range(retries + 1):
        try:
            return run()
        except ConnectionAbortedError as err:
            if attempt == retries or not ray_client_lost(err) or ray.is_initialized():
                raise
            print(f"judge_rl: Ray Client's proxy lost the server it started for this job (ray-project/ray#63202); "
                  f"connecting again ({attempt + 1} of {retries})", file=sys.stderr, flush=True)


def raised_line(err: BaseException) -> str:
    """'verl raised <Type>: <first line>' of an exception, a Ray task's error by the exception the task raised; a
    known Ray failure with what it means and what to do (RAY_CLIENT_LOST)."""
    cause = getattr(err, "cause", None)  # RayTaskError: the remote exception, not Ray's `ray::Actor.method() (pid=...)`
    if isinstance(cause, BaseException):
        err = cause
    text = ANSI.sub("", str(err)).strip()
    line = f"verl raised {type(err).__name__}" + (f": {text.splitlines()[0][:200]}" if text else "")
    if ray_client_lost(err):
        line += f" ({RAY_CLIENT_LOST}; {RAY_CLIENT_RETRIES + 1} tries)"
    return line


def lost_nodes(alive_at_start: set[str]) -> list[str]:
    """'<node id> (<address>)' of each Ray node that was alive when the job started and is dead now."""
    import ray

    return [f"{n['NodeID']} ({n.get('NodeManagerAddress', '?')})" for n in ray.nodes()
            if n["NodeID"] in alive_at_start and not n["Alive"]]


class NodeWatch:
    """Watches the Ray cluster the job runs on from a thread of this (the driver's) process: once a node that was
    alive when Ray came up is dead, it writes one line naming it to `failure_path` and ends this process (exit
    NODE_LOST_EXIT), which ends the job. verl does not always notice: with the rollout servers gone, its trainer
    waited in update_weights for a reply that never came (a ZeroMQ receive without a timeout)."""

    def __init__(self, failure_path: Path, poll_s: float = NODE_POLL_S):
        self.failure_path, self.poll_s = failure_path, poll_s
        self.alive_at_start: set[str] | None = None
        self.running = True  # verl's main is running: a node that goes as Ray shuts down afterwards is no failure
        threading.Thread(target=self._run, name="judge_rl-node-watch", daemon=True).start()

    def _run(self) -> None:
        import ray

        while not ray.is_initialized():  # verl's run_ppo starts or joins Ray
            time.sleep(self.poll_s)
        self.alive_at_start = {n["NodeID"] for n in ray.nodes() if n["Alive"]}
        lost = self._lost_within(float("inf"))
        if lost and self.running:
            self.fail(lost, "")
            os._exit(NODE_LOST_EXIT)

    def _lost_within(self, wait_s: float) -> list[str]:
        """The nodes lost so far, asked of Ray every poll_s until one is or `wait_s` has passed; [] also once Ray is
        gone (shutting down as the job ends)."""
        deadline = time.monotonic() + wait_s
        while True:
            try:
                lost = lost_nodes(self.alive_at_start or set())
            except Exception:
                return []
            if lost or time.monotonic() >= deadline:
                return lost
            time.sleep(self.poll_s)

    def fail(self, lost: list[str], cause: str) -> None:
        line = f"lost Ray node {', '.join(lost)} mid-job{cause}"
        self.failure_path.write_text(line + "\n")
        print(f"judge_rl: {line}", file=sys.stderr, flush=True)

    def explain(self, err: BaseException, wait_s: float = NODE_DEAD_WAIT_S) -> None:
        """After verl raised `err`: the line naming a node that died, once Ray has marked it dead (within `wait_s`,
        for a Ray error), else the exception's own line. The thread stops watching: this line is the job's."""
        from ray.exceptions import RayError

        self.running = False
        cause = f"; {raised_line(err)}"
        lost = [] if self.alive_at_start is None else self._lost_within(wait_s if isinstance(err, RayError) else 0.0)
        if lost:
            self.fail(lost, cause)
        else:
            self.failure_path.write_text(cause.removeprefix("; ") + "\n")


def main(path: str) -> None:
    from verl.trainer.main_ppo import main as verl_main

    note = cluster_note(os.environ)
    if note:
        print(note, flush=True)
    cfg = with_forwarded_env(OmegaConf.load(path), os.environ)
    failure = Path(path).with_name(FAILURE_FILE)
    watch = NodeWatch(failure) if os.environ.get("RAY_ADDRESS") else None  # an existing cluster: nodes can go
    try:
        run_connecting_again(lambda: verl_main(cfg))  # hydra.main passes a given config straight to the task function
    except Exception as err:
        if watch is not None:
            watch.explain(err)
        else:
            failure.write_text(raised_line(err) + "\n")
        raise
    finally:
        if watch is not None:  # verl's main is over: a node that goes as Ray shuts down is no failure of the job
            watch.running = False


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m judge_rl.backends.verl.entry <ppo_trainer.yaml>")
    main(sys.argv[1])
