"""`refused`: an import fails as a missing module inside, in every thread or in one, and works after."""

import sys
import threading

import pytest

from vlnkit.refused_imports import refused


def _forget(*names):
    for name in names:
        sys.modules.pop(name, None)


def test_a_refused_package_and_its_submodules_fail_as_missing_then_import_afterwards():
    _forget("wsgiref.util", "wsgiref.simple_server", "wsgiref")
    with refused(("wsgiref",), "a test"):
        with pytest.raises(ModuleNotFoundError, match=r"wsgiref is not imported here \(a test\)"):
            import wsgiref  # noqa: F401
        with pytest.raises(ModuleNotFoundError, match=r"wsgiref(\.util)? is not imported here"):
            import wsgiref.util  # noqa: F401
    with refused(("wsgiref.simple_server",), "a test"):
        import wsgiref.util  # the package and a sibling of the refused module import

        with pytest.raises(ModuleNotFoundError, match=r"wsgiref\.simple_server is not imported here"):
            import wsgiref.simple_server  # noqa: F401
    import wsgiref.simple_server

    assert wsgiref.util.guess_scheme({}) == "http" and wsgiref.simple_server.WSGIServer


def test_refused_in_this_thread_only_leaves_other_threads_importing():
    _forget("tabnanny")
    seen = {}

    def other():
        import tabnanny

        seen["other"] = tabnanny.__name__

    with refused(("tabnanny",), "a test", this_thread_only=True):
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
        assert seen == {"other": "tabnanny"}
        _forget("tabnanny")
        with pytest.raises(ModuleNotFoundError):
            import tabnanny  # noqa: F401


def test_an_imported_package_is_not_affected_and_the_finder_is_removed():
    import json

    before = list(sys.meta_path)
    with refused(("json",), "a test"):
        import json as again

        assert again is json
    assert sys.meta_path == before
