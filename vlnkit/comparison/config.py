"""The bootstrap's settings as one typed value: built once from the flags, checked once, passed whole.

score, report and score_probes all resample: how many replicates, from which seed, what unit is resampled,
the interval's confidence and the agent comparisons are made against. `BootstrapConfig` holds those five
and is the only place their rules live:

- `replicates` is 0 (no bootstrap) or between `min_replicates(confidence)` and MAX_REPLICATES. The floor
  is what makes a percentile interval an interval: each of its two tails must hold at least one
  replicate, B (1 - c) / 2 >= 1, so its ends are read between replicates rather than pinned to the most
  extreme one (`--bootstrap=1` gave a "95% interval" of one replicate, which can exclude the estimate);
  that is 40 replicates at 95%, 200 at 99%. The ceiling, 10,000 replicates, bounds time and memory,
  which grow in proportion (the default 1,000 already puts an interval's ends within about 0.1
  percentage point of where more replicates would).
- `confidence` is in (0, 1); `unit` is "episode" or "path" (all instructions of a path together);
  `baseline` names an agent (which agents exist is the job's to check: `check_agents`).

>>> BootstrapConfig().to_dict()
{'bootstrap': 1000, 'confidence': 0.95, 'bootstrap_unit': 'episode', 'baseline': None, 'seed': 0}
>>> BootstrapConfig(replicates=10)
Traceback (most recent call last):
...
ValueError: --bootstrap must be 0 (off) or from 40 to 10000 replicates (at --confidence=0.95 each tail of the interval needs a replicate), got 10
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from vlnkit.comparison.replicates import DEFAULT_CONFIDENCE, DEFAULT_REPLICATES
from vlnkit.comparison.resampling import UNITS

__all__ = ["BootstrapConfig", "min_replicates", "MAX_REPLICATES"]

MAX_REPLICATES = 10_000


def min_replicates(confidence: float) -> int:
    """The fewest replicates whose percentile interval at `confidence` has a replicate in each tail.

    >>> min_replicates(0.95), min_replicates(0.99), min_replicates(0.5)
    (40, 200, 4)
    """
    return math.ceil(2.0 / (1.0 - confidence) - 1e-9)


@dataclass(frozen=True)
class BootstrapConfig:
    """How a job resamples (see the module docstring); `replicates=0` turns the bootstrap off."""

    replicates: int = DEFAULT_REPLICATES
    seed: int = 0
    unit: str = "episode"
    confidence: float = DEFAULT_CONFIDENCE
    baseline: str | None = None

    def __post_init__(self) -> None:
        c = self.confidence
        if isinstance(c, bool) or not isinstance(c, (int, float)) or not 0.0 < c < 1.0:
            raise ValueError(f"--confidence must be a number in (0, 1), e.g. 0.95, got {c!r}")
        r = self.replicates
        if isinstance(r, bool) or not isinstance(r, int):
            raise ValueError(f"--bootstrap must be a whole number of replicates, got {r!r}")
        low = min_replicates(c)
        if r != 0 and not low <= r <= MAX_REPLICATES:
            raise ValueError(
                f"--bootstrap must be 0 (off) or from {low} to {MAX_REPLICATES} replicates (at --confidence={c:g} "
                f"each tail of the interval needs a replicate), got {r}"
            )
        if self.unit not in UNITS:
            raise ValueError(f"--bootstrap_unit must be one of {', '.join(UNITS)}, got {self.unit!r}")

    @property
    def enabled(self) -> bool:
        return self.replicates > 0

    @classmethod
    def from_flags(cls, opts) -> BootstrapConfig:
        """From parsed flags: `bootstrap`, `seed` and, where the job has them, `confidence`, `bootstrap_unit`
        and `baseline` (a job without one resamples with the default)."""
        return cls(
            replicates=opts.bootstrap,
            seed=opts.seed,
            unit=getattr(opts, "bootstrap_unit", "episode"),
            confidence=getattr(opts, "confidence", DEFAULT_CONFIDENCE),
            baseline=getattr(opts, "baseline", None),
        )

    def check_agents(self, agents) -> None:
        """ValueError when `baseline` is not one of `agents`."""
        if self.baseline is not None and self.baseline not in agents:
            raise ValueError(f"--baseline={self.baseline} is not one of the agents: {', '.join(agents)}")

    def to_dict(self) -> dict:
        """The settings as a summary records them."""
        return {
            "bootstrap": self.replicates,
            "confidence": float(self.confidence),
            "bootstrap_unit": self.unit,
            "baseline": self.baseline,
            "seed": int(self.seed),
        }
