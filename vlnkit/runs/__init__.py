"""How a run ends, wherever its pipeline runs: where it writes (`staging`: the version folder a job's
pipeline is given), the lock and the one-step publication (`publication`), the verdict (`verdict`), the
manifest (`manifest`) and the last step that does it all once every write has finished (`ending`).

>>> from vlnkit.runs import Outcome, judge
>>> judge(Outcome(read=0, failed=0), max_failure_fraction=0.5)
'nothing was read: the inputs hold no records'
"""

from vlnkit._exports import lazy_exports

__getattr__, __all__ = lazy_exports(
    __name__,
    {
        "staging": ("Staging",),
        "publication": ("Publication", "Refused", "DEFAULT_KEEP_VERSIONS"),
        "verdict": ("Outcome", "judge", "written"),
        "manifest": ("manifest", "describe_outputs"),
        "ending": ("Ending", "finish", "read_ending", "Failed"),
    },
)
