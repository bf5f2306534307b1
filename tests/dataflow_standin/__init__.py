"""A local stand-in of the Dataflow service for the suite: Beam's real `DataflowRunner` launches jobs on it.

    with DataflowStandin(workdir) as service:
        subprocess.run([sys.executable, "-m", "pipelines.build_r4r", "--config=configs/dataflow.yaml",
                        *service.launcher_flags(bucket), ...], env=service.launcher_env())

`service` implements the v1beta3 API over TLS (`service.py`); every job runs from the files its
launcher staged in the bucket, on Beam's portable job service and a worker pool whose Python
environment is built from those files (`environment.py`, `boot.py`, `portable.py`); a Flex
Template launch starts the template's launcher program and returns once it created its job
(`flex.py`).
"""

from tests.dataflow_standin.service import DataflowStandin, JobRun

__all__ = ["DataflowStandin", "JobRun"]
