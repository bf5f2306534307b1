"""A Flink session cluster on this machine (`flink`: start, stop, status), its pinned Java parts
(`java_parts`) and the SDK worker its TaskManagers start (`sdk_worker`). See docs/cloud.md, "Flink".
"""

from vlnkit._exports import lazy_exports

__getattr__, __all__ = lazy_exports(
    __name__,
    {
        "flink": ("start", "stop", "status", "load_config", "overview", "ClusterError"),
        "java_parts": ("check_job_server_jars", "flink_dist_dir", "MissingJavaParts", "BEAM_VERSION"),
    },
)
