"""Progress lines during long runs: each worker logs its running count at most every few seconds."""

from __future__ import annotations

import logging
import time

log = logging.getLogger("vlnkit.progress")


class Progress:
    """Create it in `DoFn.setup` (it holds a clock); call `tick(n)` as elements are handled."""

    def __init__(self, what: str, every_seconds: float = 15.0):
        self.what = what
        self.every = every_seconds
        self.count = 0
        self._started = self._last = time.monotonic()

    def tick(self, n: int = 1) -> None:
        self.count += n
        now = time.monotonic()
        if now - self._last >= self.every:
            self._last = now
            rate = self.count / max(now - self._started, 1e-9)
            log.info("%s: %d so far (%.0f/s on this worker)", self.what, self.count, rate)
