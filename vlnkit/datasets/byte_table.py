"""A hash table from byte strings to integers that compiled code can use: the vocabulary's viewpoint ids,
looked up straight from the bytes of a JSON line (`vlnkit.datasets.line_scan`), without a Python string.

Why written here: numba has no hash map keyed by byte ranges of a buffer, and a Python dict needs a
string per look-up, which is what the scanners exist to avoid. Open addressing over one flat array of
the keys' bytes, splitmix64-mixed hashes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vlnkit.compiled import njit

__all__ = ["ByteTable", "hash_step", "hash_finish", "lookup"]


@njit(cache=True, inline="always")
def _mix(h):
    """splitmix64's finaliser: every bit of the running hash reaches every bit of the slot number."""
    h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return h ^ (h >> np.uint64(31))


@njit(cache=True, inline="always")
def hash_step(h, c):
    """One byte into the running hash: a rotation and an xor (one or two cycles, no multiply chain)."""
    return ((h << np.uint64(5)) | (h >> np.uint64(59))) ^ np.uint64(c)


@njit(cache=True, inline="always")
def hash_finish(h, n):
    return _mix(h + np.uint64(n) * np.uint64(0x9E3779B97F4A7C15))


@njit(cache=True)
def _hash(buf, start, stop):
    """The hash of buf[start:stop] (as `_plain_string` makes it while it scans)."""
    h = np.uint64(0)
    for i in range(start, stop):
        h = hash_step(h, buf[i])
    return hash_finish(h, stop - start)


@njit(cache=True, inline="always")
def lookup(h, buf, start, stop, keys, offsets, values, hashes, slots, mask):
    """The value of the key equal to buf[start:stop] (whose `_hash` is h), or -1."""
    n = stop - start
    i = np.int64(h & mask)
    while True:
        e = slots[i]
        if e < 0:
            return -1
        if hashes[e] == h:
            a = offsets[e]
            if offsets[e + 1] - a == n:
                same = True
                for j in range(n):
                    if keys[a + j] != buf[start + j]:
                        same = False
                        break
                if same:
                    return values[e]
        i = (i + 1) & np.int64(mask)


@njit(cache=True)
def _fill(keys, offsets, hashes, slots, mask):
    for e in range(len(offsets) - 1):
        h = _hash(keys, offsets[e], offsets[e + 1])
        hashes[e] = h
        i = np.int64(h & mask)
        while slots[i] >= 0:
            i = (i + 1) & np.int64(mask)
        slots[i] = e


@dataclass(frozen=True)
class ByteTable:
    """An open-addressing hash table from byte strings to integers, for compiled code (no Python objects).

    >>> t = ByteTable.of(["ab", "c"], [5, 7])
    >>> t.get(b"c"), t.get(b"zz")
    (7, -1)
    """

    keys: np.ndarray  # uint8: every key's bytes, one after the other
    offsets: np.ndarray  # int64 (n + 1,): key e is keys[offsets[e]:offsets[e + 1]]
    values: np.ndarray  # int32 (n,)
    hashes: np.ndarray  # uint64 (n,): each key's `_hash`
    slots: np.ndarray  # int64 (2**m,): entry number, or -1
    mask: np.uint64

    @classmethod
    def of(cls, keys: list[str], values) -> ByteTable:
        """Keys must be distinct (a repeated key would shadow itself)."""
        encoded = [k.encode("utf-8") for k in keys]
        offsets = np.zeros(len(encoded) + 1, np.int64)
        np.cumsum([len(k) for k in encoded], out=offsets[1:])
        flat = np.frombuffer(b"".join(encoded), np.uint8) if encoded else np.zeros(0, np.uint8)
        size = 1 << max(4, (2 * len(encoded)).bit_length())
        slots = np.full(size, -1, np.int64)
        hashes = np.zeros(len(encoded), np.uint64)
        _fill(flat, offsets, hashes, slots, np.uint64(size - 1))
        return cls(flat, offsets, np.asarray(values, np.int32), hashes, slots, np.uint64(size - 1))

    def get(self, key: bytes) -> int:
        buf = np.frombuffer(key, np.uint8)
        return int(lookup(np.uint64(_hash(buf, 0, len(buf))), buf, 0, len(buf), *self.args()))

    def args(self) -> tuple:
        return self.keys, self.offsets, self.values, self.hashes, self.slots, self.mask
