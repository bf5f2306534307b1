"""Wall time and peak memory of one command, measured the same way by every benchmark.

`measured(cmd)` starts a fresh measuring process (`python -m benchmarks.measure CMD_JSON`) that runs
`cmd` as its only child and reports the wall time, `resource.getrusage(RUSAGE_CHILDREN).ru_maxrss`:
the peak RSS of the largest process in that command's tree (for a multi-process Beam run, the largest
of the job and its workers), and the CPU time (user and system) of that tree. A fresh measuring process per command keeps one run's peak from
hiding behind another's.

    >>> measured([sys.executable, "-c", "pass"])  # doctest: +SKIP
    {'wall_s': 0.05, 'peak_rss_mb': 9.8, 'cpu_s': 0.04, 'stdout': ''}
"""

from __future__ import annotations

import compileall
import json
import os
import resource
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def best(fn, repeat: int) -> float:
    """The shortest of `repeat` in-process timings of `fn()` (seconds): the least disturbed one."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def measure(cmd: list[str]) -> dict:
    """Run cmd as a child of this process; wall seconds, peak RSS (MB) and CPU seconds of its process tree."""
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ROOT})
    wall = time.perf_counter() - start
    if proc.returncode:
        raise SystemExit(f"{cmd} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    rss_mb = usage.ru_maxrss / 1024  # Linux: kilobytes
    cpu_s = usage.ru_utime + usage.ru_stime
    return {
        "wall_s": round(wall, 2),
        "peak_rss_mb": round(rss_mb, 1),
        "cpu_s": round(cpu_s, 2),
        "stdout": proc.stdout[-(1 << 20) :],
    }


def measured(cmd: list[str]) -> dict:
    """`measure` in its own process, so RUSAGE_CHILDREN covers only this command."""
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.measure", json.dumps(cmd)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": ROOT},
    )
    if out.returncode:
        raise SystemExit(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def cached_bytecode() -> None:
    """Compile the repository's modules into `__pycache__`, as Python does on any module's first import.

    A user's second run of a job starts from that cache. This machine sets PYTHONDONTWRITEBYTECODE,
    which leaves the repository (an editable install, so pip compiled nothing) without it: every
    measured run would compile the ~170 modules a job imports again (about 0.1 s of each start, more
    on a busy machine), a cost no user pays twice. The plain script's imports of this library get the
    same cache."""
    for package in ("vlnkit", "transforms", "pipelines", "benchmarks"):
        compileall.compile_dir(os.path.join(ROOT, package), quiet=1)


def interleaved_rounds(
    commands: dict[str, list[str]], rounds: int, check, baseline: str = "plain script", warmup: int = 0
) -> dict:
    """Run every command once per round, in turn, and print each round and the medians.

    On a shared machine the speed drifts by tens of percent within minutes, so each round's ratios
    compare runs made side by side against `baseline`, and the median round is reported.
    `check(runs)` looks at each round's results (and outputs) before the next round starts. `warmup`
    rounds run first, are checked and printed, and are left out of the medians: a workload that reads
    thousands of small files measures the disk's cold cache in its first round, not the code. Returns
    {name: {"wall_s", "ratio", "cpu_s", "peak_rss_mb"}} (medians; the largest peak).
    """
    cached_bytecode()
    for n in range(warmup):
        runs = {name: measured(cmd) for name, cmd in commands.items()}
        check(runs)
        base = runs[baseline]["wall_s"]
        print(
            f"warm-up round {n + 1} (not in the medians): "
            + ", ".join(f"{k} {r['wall_s']:.1f} s ({r['wall_s'] / base:.2f}x)" for k, r in runs.items())
        )
    done = []
    for n in range(rounds):
        runs = {name: measured(cmd) for name, cmd in commands.items()}
        check(runs)
        done.append(runs)
        base = runs[baseline]["wall_s"]
        print(
            f"round {n + 1}: "
            + ", ".join(f"{k} {r['wall_s']:.1f} s ({r['wall_s'] / base:.2f}x)" for k, r in runs.items())
        )
    print(f"\n{'run':26} {'median wall s':>14} {'median x plain':>15} {'median CPU s':>13} {'peak RSS MB':>12}")
    table = {}
    for name in commands:
        walls = [r[name]["wall_s"] for r in done]
        ratios = [r[name]["wall_s"] / r[baseline]["wall_s"] for r in done]
        cpu = statistics.median(r[name]["cpu_s"] for r in done)
        rss = max(r[name]["peak_rss_mb"] for r in done)
        table[name] = {
            "wall_s": statistics.median(walls),
            "ratio": statistics.median(ratios),
            "cpu_s": cpu,
            "peak_rss_mb": rss,
        }
        print(f"{name:26} {table[name]['wall_s']:14.1f} {table[name]['ratio']:15.2f} {cpu:13.1f} {rss:12.0f}")
    return table


if __name__ == "__main__":
    print(json.dumps(measure(json.loads(sys.argv[1]))))
