import pytest


@pytest.fixture(scope="session")
def speaker_dir(shared_data):
    from tests.conftest import _require

    return _require(shared_data / "speaker")
