"""One stable 64-bit hash for every seeded choice, bucket and resampling weight in the toolkit.

Why a module of its own: a choice that must be the same on every runner, worker count, process and
Python version cannot use `hash()` (salted per process) or `repr()` (5, 5.0 and `numpy.int64(5)` print
differently although they are equal keys). Keys are first reduced to a canonical typed form:

- numbers that are equal are the same key, as they are in a dict: `5`, `5.0` and `numpy.int64(5)`
  (and `True` and `1`, since Python's bools are integers);
- strings, bytes, `None`, tuples and lists (the same key when their items are) each have a tag of their
  own, so `"5"` and `5` differ;
- anything else is refused with `TypeError`, never hashed through its `repr`.

Integers that fit in 64 bits are hashed with the splitmix64 finaliser, which numpy can apply to a whole
column at once (`stable_hash_array`), so bucketing a million path ids costs no Python loop; other keys
go through BLAKE2b. Seeds are any integer, never masked. The mixing is frozen: changing it changes
every seeded output of the toolkit, so `tests/vlnkit/test_hashing.py` pins some values.

>>> stable_hash(5) == stable_hash(5.0) == stable_hash(np.int64(5))
True
>>> stable_hash("5") == stable_hash(5)
False
>>> stable_bucket("val_seen", 7, buckets=16, seed=1)
8
>>> stable_hash_array(np.array([5, -1]), seed=3).tolist() == [stable_hash(5, seed=3), stable_hash(-1, seed=3)]
True
"""

from __future__ import annotations

import hashlib
import math
import random
import struct

import numpy as np

__all__ = [
    "stable_hash",
    "stable_hash_array",
    "stable_bucket",
    "stable_rng",
    "stable_random",
    "seed_state",
    "integer_key_hashes",
]

_MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
# One tag per kind of key, so that keys of different kinds (the string "5" and the number 5) differ.
TAG_INT = 0x1F83D9ABFB41BD6B
_TAG_NEG = 0x5BE0CD19137E2179
_TAG_SEED = 0x6A09E667F3BCC908
_KIND = {"big": b"I", "float": b"F", "str": b"S", "bytes": b"B", "none": b"N", "seq": b"Q"}


def _mix(z: int) -> int:
    """splitmix64's finaliser on a Python int (mod 2**64)."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


def _mix_array(z: np.ndarray) -> np.ndarray:
    """The same finaliser on a uint64 column (numpy's uint64 arithmetic wraps mod 2**64)."""
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _digest(kind: str, payload: bytes) -> int:
    return int.from_bytes(hashlib.blake2b(_KIND[kind] + payload, digest_size=8).digest(), "little")


def _int_hash(v: int) -> int:
    if 0 <= v <= _MASK:
        return _mix(v ^ TAG_INT)
    if -(1 << 63) <= v < 0:
        return _mix((v & _MASK) ^ _TAG_NEG)
    return _digest("big", str(v).encode())


def _key_hash(key) -> int:
    """The 64-bit hash of one canonical key (see the module docstring for what is equal)."""
    if isinstance(key, (int, np.integer)):  # bool is an int
        return _int_hash(int(key))
    if isinstance(key, (float, np.floating)):
        x = float(key)
        if math.isfinite(x) and x == int(x):
            return _int_hash(int(x))
        if math.isnan(x):
            x = math.nan  # one NaN, whatever its payload
        return _digest("float", struct.pack("<d", x))
    if isinstance(key, str):
        return _digest("str", key.encode("utf-8", "surrogatepass"))
    if isinstance(key, (bytes, bytearray, memoryview)):
        return _digest("bytes", bytes(key))
    if key is None:
        return _digest("none", b"")
    if isinstance(key, (tuple, list)):
        h = _digest("seq", len(key).to_bytes(8, "little"))
        for item in key:
            h = _combine(h, _key_hash(item))
        return h
    raise TypeError(f"stable_hash: cannot hash a {type(key).__name__} key (use numbers, strings, bytes or tuples)")


def _combine(acc: int, h: int) -> int:
    return _mix((acc * GOLDEN + h) & _MASK)


def _start(seed: int) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"stable_hash: seed must be an integer, got {seed!r:.40}")
    return _mix(_key_hash(int(seed)) ^ _TAG_SEED)


def stable_hash(*keys, seed: int = 0) -> int:
    """A 64-bit unsigned hash of `keys` (in order) and `seed`, the same in every process and version.

    >>> stable_hash("17DRP5sb8fy", 3, seed=0) == stable_hash("17DRP5sb8fy", 3.0, seed=0)
    True
    """
    acc = _start(seed)
    for key in keys:
        acc = _combine(acc, _key_hash(key))
    return acc


def stable_hash_array(*columns, seed: int = 0) -> np.ndarray:
    """Row i: `stable_hash(columns[0][i], columns[1][i], ..., seed=seed)`, as a uint64 array, in numpy.

    Each column is an integer numpy array (one value per row) or a single key (the same for every row).

    >>> stable_hash_array(np.array([1, 2]), "agent").tolist() == [stable_hash(1, "agent"), stable_hash(2, "agent")]
    True
    """
    arrays = [c for c in columns if isinstance(c, np.ndarray)]
    n = len(arrays[0]) if arrays else 1
    acc = np.full(n, _start(seed), dtype=np.uint64)
    for column in columns:
        if isinstance(column, np.ndarray):
            h = _int_column_hash(column)
        else:
            h = np.uint64(_key_hash(column))
        with np.errstate(over="ignore"):
            acc = _mix_array(acc * np.uint64(GOLDEN) + h)
    return acc


def seed_state(seed: int) -> int:
    """The hash state `stable_hash_array` starts from for `seed`: for compiled code that repeats its steps
    (state = mix(state * GOLDEN + key hash) per column) and must give the same bits.

    >>> h = integer_key_hashes(np.array([7]))[0]
    >>> _mix((seed_state(2) * GOLDEN + int(h)) & _MASK) == stable_hash(7, seed=2)
    True
    """
    return _start(seed)


def integer_key_hashes(column: np.ndarray) -> np.ndarray:
    """Each integer key's own hash, before it is combined into the state (see `seed_state`)."""
    return _int_column_hash(column)


def _int_column_hash(column: np.ndarray) -> np.ndarray:
    if column.dtype.kind == "u":
        return _mix_array(column.astype(np.uint64) ^ np.uint64(TAG_INT))
    if column.dtype.kind in "ib":
        signed = column.astype(np.int64)
        tags = np.where(signed < 0, np.uint64(_TAG_NEG), np.uint64(TAG_INT))
        return _mix_array(signed.view(np.uint64) ^ tags)
    raise TypeError(f"stable_hash_array: columns must hold integers, got dtype {column.dtype}")


def stable_bucket(*keys, buckets: int, seed: int = 0) -> int:
    """Which of `buckets` buckets the key falls in (equal keys of any type, the same bucket).

    >>> stable_bucket(5, buckets=8) == stable_bucket(5.0, buckets=8)
    True
    """
    return stable_hash(*keys, seed=seed) % buckets


def stable_rng(*keys, seed: int = 0) -> np.random.Generator:
    """A numpy Generator that depends only on `keys` and `seed` (an episode's own random stream).

    >>> float(stable_rng("4332_0", seed=7).random()) == float(stable_rng("4332_0", seed=7).random())
    True
    """
    return np.random.default_rng(stable_hash(*keys, seed=seed))


def stable_random(*keys, seed: int = 0) -> random.Random:
    """The standard library's `random.Random`, seeded the same way (for code that needs `choice` on lists).

    >>> stable_random("a", seed=1).random() == stable_random("a", seed=1).random()
    True
    """
    return random.Random(stable_hash(*keys, seed=seed))
