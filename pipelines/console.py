"""What every job prints: its summary tables and the closing lines naming its outputs."""

from __future__ import annotations

from vlnkit.io import fileio


def format_table(rows: list[tuple[str, object]], title: str) -> str:
    width = max((len(k) for k, _ in rows), default=0)
    lines = [title, "-" * len(title)]
    for k, v in rows:
        if isinstance(v, float):
            v = f"{v:.4f}"
        lines.append(f"  {k.ljust(width)}  {v}")
    return "\n".join(lines)


def print_outputs(output_dir: str, dead_letters: int, extra: str = "") -> None:
    """The closing lines of every job: where the outputs are and, if any, where the dead letters are."""
    print(f"Output: {output_dir}{extra}")
    if dead_letters:
        print(f"{dead_letters} record(s) could not be used: see {fileio.join(output_dir, 'dead_letter-*.jsonl')}")
