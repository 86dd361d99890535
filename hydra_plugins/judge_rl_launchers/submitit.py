"""hydra-submitit-launcher's local and SLURM launchers, with the sweep's points collected one at a time: a point its
launcher killed (a time limit, a preemption past its requeues, an out-of-memory kill: whatever submitit reports as a
job that did not complete) is a failed point with its reason in its status.json, and the sweep's other points and its
report (judge_rl/jobs/shell.py, SweepReport) go on. The plugin's own `launch` collects the results in one list
comprehension, so the first such point ended the whole sweep in a 31-line `UncompletedJobError` traceback.

Registered under the plugin's own names (`hydra/launcher=submitit_local`, `submitit_slurm`, with its settings), through
Hydra's ConfigStore: a sweep started with either gets these. A point that ran returns as before; judge_rl's task
function already turns an error of the job itself into a failed point."""

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from hydra.core.config_store import ConfigStore
from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, JobStatus, filter_overrides
from hydra_plugins.hydra_submitit_launcher.config import BaseQueueConf, LocalQueueConf, SlurmQueueConf
from hydra_plugins.hydra_submitit_launcher.submitit_launcher import LocalLauncher, SlurmLauncher
from omegaconf import OmegaConf

log = logging.getLogger(__name__)


# no `from __future__ import annotations`: Hydra's plugin scan runs this module outside sys.modules, where a dataclass
# with string annotations cannot be made


def point_killed(point_dir: Path, overrides: Sequence[str], error: BaseException) -> JobReturn:
    """The point at `point_dir`, killed by its launcher before it could say so: status.json `failed` with the
    launcher's reason (its first line), `.hydra/overrides.yaml` where Hydra had not written one (the report's row
    names the point by them); a JobReturn that Hydra's sweeper accepts, so the other points are collected."""
    from judge_rl.rundir import read_status, write_status

    # submitit's message: "Job <id> (task: 0) with path <result.pkl>" then "has not produced any output (state: TIMEOUT)"
    lines = str(error).strip().splitlines() or [type(error).__name__]
    reason = " ".join(lines[:2]) if len(lines) > 1 and "state:" in lines[1] else lines[0]
    point_dir.mkdir(parents=True, exist_ok=True)
    saved = point_dir / ".hydra" / "overrides.yaml"
    if not saved.exists():
        saved.parent.mkdir(parents=True, exist_ok=True)
        saved.write_text(OmegaConf.to_yaml(OmegaConf.create(list(overrides))))
    status = read_status(point_dir) or {}
    # a point that said how it ended keeps its word (a SIGTERM'd point is "interrupted", and submitit, finding no
    # result, reports it as not completed): only one killed before it could ("running", or nothing) is failed here
    if status.get("status") in (None, "running"):
        write_status(point_dir, "failed", f"killed by its launcher ({type(error).__name__}): {reason}")
    ret = JobReturn(overrides=list(overrides), status=JobStatus.COMPLETED, _return_value=None)
    ret.working_dir = str(point_dir)
    return ret


class _OneAtATime:
    """`launch` of hydra-submitit-launcher's BaseSubmititLauncher, each point's result collected on its own."""

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        import submitit

        assert self.config is not None and len(job_overrides) > 0
        init_keys = {"submitit_folder", "max_num_timeout"}
        executor = submitit.AutoExecutor(
            cluster=self._EXECUTOR, folder=self.params["submitit_folder"],
            **{f"{self._EXECUTOR}_max_num_timeout": self.params["max_num_timeout"]} if "max_num_timeout" in self.params
            else {},
        )  # fmt: skip
        shared = set(OmegaConf.structured(BaseQueueConf).keys())
        executor.update_parameters(**{k if k in shared else f"{self._EXECUTOR}_{k}": v
                                      for k, v in self.params.items() if k not in init_keys})  # fmt: skip
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        log.info(f"Submitit '{self._EXECUTOR}' sweep output dir : {sweep_dir}")
        params = []
        for idx, overrides in enumerate(job_overrides, start=initial_job_idx):
            log.info(f"\t#{idx} : {' '.join(filter_overrides(overrides))}")
            params.append((list(overrides), "hydra.sweep.dir", idx, f"job_id_for_{idx}", Singleton.get_state()))
        jobs = executor.map_array(self, *zip(*params))
        returns = []
        for job, (overrides, _, idx, _, _) in zip(jobs, params):
            try:
                returns.append(job.results()[0])
            except Exception as error:  # noqa: BLE001  submitit's UncompletedJobError, FailedJobError, ...
                point = sweep_dir / str(idx)  # conf/config.yaml: hydra.sweep.subdir is the point's job number
                log.error(f"sweep point #{idx} ({' '.join(filter_overrides(overrides))}) was killed by its launcher")
                returns.append(point_killed(point, overrides, error))
        return returns


class JudgeRLLocalLauncher(_OneAtATime, LocalLauncher):
    pass


class JudgeRLSlurmLauncher(_OneAtATime, SlurmLauncher):
    pass


@dataclass
class LocalConf(LocalQueueConf):
    _target_: str = "hydra_plugins.judge_rl_launchers.submitit.JudgeRLLocalLauncher"


@dataclass
class SlurmConf(SlurmQueueConf):
    _target_: str = "hydra_plugins.judge_rl_launchers.submitit.JudgeRLSlurmLauncher"


# the plugin's names, stored after the plugin's own nodes (imported above): these are what the names select
ConfigStore.instance().store(group="hydra/launcher", name="submitit_local", node=LocalConf(), provider="judge_rl")
ConfigStore.instance().store(group="hydra/launcher", name="submitit_slurm", node=SlurmConf(), provider="judge_rl")
