"""`run_in_parallel`: every range called once, errors raised, callers on several threads at once."""

import threading

import numpy as np
import pytest

from vlnkit.parallel import parts, run_in_parallel


def test_every_range_is_called_once_and_the_first_on_the_calling_thread():
    out = np.zeros(1000, np.int64)
    threads = {}

    def call(first, stop):
        out[first:stop] += 1
        threads[first] = threading.get_ident()

    ranges = parts(1000, 4, 64)
    run_in_parallel(call, ranges)
    assert (out == 1).all()
    assert threads[ranges[0][0]] == threading.get_ident()


def test_an_error_in_any_range_is_raised_after_every_range_has_ended():
    ended = []

    def call(first, stop):
        if first > 0:
            raise ValueError(f"range {first}")
        ended.append(first)

    with pytest.raises(ValueError, match="range"):
        run_in_parallel(call, parts(100, 3))
    assert ended == [0]


def test_callers_on_several_threads_at_once_get_their_own_results():
    results = {}

    def caller(k):
        out = np.zeros(5000, np.int64)
        for _ in range(20):
            run_in_parallel(lambda first, stop: out.__setitem__(slice(first, stop), k), parts(5000, 4, 16))
        results[k] = out

    workers = [threading.Thread(target=caller, args=(k,)) for k in range(1, 6)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert all((results[k] == k).all() for k in range(1, 6))
