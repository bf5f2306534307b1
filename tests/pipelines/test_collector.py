"""The command's garbage collector: off through start-up, on while the pipeline runs, as found after."""

import gc

import pytest

from pipelines.collector import command_collection, resume_collection


@pytest.fixture(autouse=True)
def _restore():
    enabled = gc.isenabled()
    yield
    gc.unfreeze()
    (gc.enable if enabled else gc.disable)()


def test_paused_at_start_up_resumed_for_the_pipeline_and_restored_after():
    gc.enable()
    with command_collection():
        assert not gc.isenabled()
        resume_collection()
        assert gc.isenabled()
        assert gc.get_freeze_count() > 0  # what start-up made is no longer searched
    assert gc.isenabled()


def test_a_caller_without_the_collector_keeps_it_off():
    gc.disable()
    with command_collection():
        pass
    assert not gc.isenabled()


def test_resume_is_a_no_op_outside_a_command():
    gc.enable()
    before = gc.get_freeze_count()
    resume_collection()
    assert gc.isenabled() and gc.get_freeze_count() == before


def test_a_failing_command_still_restores_the_collector():
    gc.enable()
    with pytest.raises(RuntimeError), command_collection():
        raise RuntimeError("boom")
    assert gc.isenabled()
