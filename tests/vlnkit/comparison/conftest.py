"""The real-agent table of `real_agents` as a session fixture."""

from __future__ import annotations

import pytest

from tests.vlnkit.comparison.real_agents import load_val_unseen


@pytest.fixture(scope="session")
def val_unseen(shared_data, r2r_dir, connectivity_dir):
    """{"table": {agent, instr_id, scan, language, length_m, path, <metric>...}, "graphs", "references"}."""
    return load_val_unseen(str(shared_data), str(r2r_dir), connectivity_dir)
