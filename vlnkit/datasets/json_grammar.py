"""The pieces of JSON grammar the compiled line scanners are made of (`vlnkit.datasets.line_scan`): white
space, numbers, integers, strings (plain, or with escapes and UTF-8 checked), a skipped value, an object key,
a canonical instr_id.

Each returns the position after what it read, or -1 when the bytes are not certainly what the typed
decoder (`vlnkit.datasets.records`) accepts: the scanner then gives the block to the general reader, which
words the refusal. Written by hand for the same reason as the scanners (see there): a JSON library builds
Python objects per value, which is the cost the scanners remove.
"""

from __future__ import annotations

import numpy as np

from vlnkit.compiled import njit
from vlnkit.datasets.byte_table import hash_finish, hash_step

# Status of one scan: the whole block was accepted, or where it stopped.
OK, REJECT = 0, 1
_QUOTE, _BACKSLASH, _COMMA, _COLON = 34, 92, 44, 58
_LBRACKET, _RBRACKET, _LBRACE, _RBRACE = 91, 93, 123, 125
_MAX_DEPTH = 64  # nesting of a skipped value (an unknown key's); deeper is read the general way
_INT64_MAX = np.uint64(9223372036854775807)


# Bytes that end the fast loop over a string's text: a quote ends it; a backslash, a control character, DEL or
# any non-ASCII byte needs a closer look (`_any_string`) or sends the block to the general reader.
_STOP = np.zeros(256, np.uint8)
_STOP[:32] = 1
_STOP[[34, 92]] = 1
_STOP[127:] = 1


# ----------------------------------------------------------------------------- grammar pieces
# Each returns the position after what it read, or -1 when the bytes are not (certainly) what the typed
# decoder accepts. Lines never hold "\n" or "\r" (the caller splits at "\n" and leaves blocks holding
# any other line break to the general reader), so white space within a line is space and tab.
@njit(cache=True, inline="always")
def _ws(buf, p, end):
    while p < end and (buf[p] == 32 or buf[p] == 9):
        p += 1
    return p


@njit(cache=True, inline="always")
def _digit(c):
    return 48 <= c <= 57


@njit(cache=True, inline="always")
def _number(buf, p, end):
    """A JSON number of at most 20 integer digits and a two-digit exponent: always finite, as the typed
    decoder's FiniteNumber requires; longer ones go to the general reader, which words their refusal."""
    if p < end and buf[p] == 45:
        p += 1
    if p >= end:
        return -1
    if buf[p] == 48:
        p += 1
    elif _digit(buf[p]):
        q = p
        while p < end and _digit(buf[p]):
            p += 1
        if p - q > 20:
            return -1
    else:
        return -1
    if p < end and buf[p] == 46:
        p += 1
        q = p
        while p < end and _digit(buf[p]):
            p += 1
        if p == q:
            return -1
    if p < end and (buf[p] == 101 or buf[p] == 69):
        p += 1
        if p < end and (buf[p] == 43 or buf[p] == 45):
            p += 1
        q = p
        while p < end and _digit(buf[p]):
            p += 1
        if p == q or p - q > 2:
            return -1
    return p


@njit(cache=True)
def _integer(buf, p, end, out):
    """A JSON integer within 64 bits into out[0]; the position after it, or -1."""
    negative = False
    if p < end and buf[p] == 45:
        negative = True
        p += 1
    if p >= end or not _digit(buf[p]):
        return -1
    q = p
    value = np.uint64(0)
    if buf[p] == 48:
        p += 1
    else:
        while p < end and _digit(buf[p]):
            if p - q >= 19:
                return -1
            value = value * np.uint64(10) + np.uint64(buf[p] - 48)
            p += 1
    if p < end and (buf[p] == 46 or buf[p] == 101 or buf[p] == 69):
        return -1  # a float where an integer is required
    if value > _INT64_MAX + np.uint64(1 if negative else 0):
        return -1
    out[0] = -np.int64(value - np.uint64(1)) - 1 if negative and value > 0 else np.int64(value)
    return p


@njit(cache=True, inline="always")
def _plain_string(buf, p, end):
    """A string of printable ASCII without escapes, p at its quote: (start, stop) of its text and its `_hash`,
    or (-1, -1, 0). The hash is made in the same pass that finds the closing quote."""
    if p >= end or buf[p] != _QUOTE:
        return -1, -1, np.uint64(0)
    p += 1
    s = p
    h = np.uint64(0)
    while p < end and not _STOP[buf[p]]:
        h = hash_step(h, buf[p])
        p += 1
    if p >= end or buf[p] != _QUOTE:
        return -1, -1, np.uint64(0)
    return s, p, hash_finish(h, p - s)


@njit(cache=True)
def _utf8(buf, p, end):
    """The length of the valid UTF-8 sequence of a non-ASCII character at p (RFC 3629), or -1 (also for the
    three characters that `str.splitlines` takes for line breaks)."""
    c = buf[p]
    if 0xC2 <= c <= 0xDF:
        n, lo, hi = 2, 0x80, 0xBF
    elif c == 0xE0:
        n, lo, hi = 3, 0xA0, 0xBF
    elif 0xE1 <= c <= 0xEC or c == 0xEE or c == 0xEF:
        n, lo, hi = 3, 0x80, 0xBF
    elif c == 0xED:
        n, lo, hi = 3, 0x80, 0x9F
    elif c == 0xF0:
        n, lo, hi = 4, 0x90, 0xBF
    elif 0xF1 <= c <= 0xF3:
        n, lo, hi = 4, 0x80, 0xBF
    elif c == 0xF4:
        n, lo, hi = 4, 0x80, 0x8F
    else:
        return -1
    if p + n > end or not lo <= buf[p + 1] <= hi:
        return -1
    for j in range(2, n):
        if not 0x80 <= buf[p + j] <= 0xBF:
            return -1
    if c == 0xC2 and buf[p + 1] == 0x85 or c == 0xE2 and buf[p + 1] == 0x80 and 0xA8 <= buf[p + 2] <= 0xA9:
        return -1  # NEL, LS, PS: line breaks to `str.splitlines`, which the general reader splits at
    return n


@njit(cache=True)
def _hex(c):
    if 48 <= c <= 57:
        return c - 48
    if 97 <= c <= 102:
        return c - 87
    if 65 <= c <= 70:
        return c - 55
    return -1


@njit(cache=True)
def _any_string(buf, p, end):
    """Any JSON string whose text is never looked at (an instruction), p at its quote: the position after
    it, or -1. Escapes of a UTF-16 surrogate go to the general reader (as do blocks holding U+2028, U+2029
    or NEL, where a line splitter may cut: the caller's check)."""
    if p >= end or buf[p] != _QUOTE:
        return -1
    p += 1
    while p < end:
        while p < end and not _STOP[buf[p]]:  # the fast loop: one table look-up per byte
            p += 1
        if p >= end:
            return -1
        c = buf[p]
        if c == _QUOTE:
            return p + 1
        if c == _BACKSLASH:
            if p + 1 >= end:
                return -1
            e = buf[p + 1]
            if e == 34 or e == 92 or e == 47 or e == 98 or e == 102 or e == 110 or e == 114 or e == 116:
                p += 2
                continue
            if e != 117 or p + 6 > end:
                return -1
            v = 0
            for j in range(p + 2, p + 6):
                d = _hex(buf[j])
                if d < 0:
                    return -1
                v = v * 16 + d
            if 0xD800 <= v <= 0xDFFF:
                return -1
            p += 6
            continue
        if c < 128:  # a control character or DEL (DEL is valid JSON text: take it here)
            if c == 127:
                p += 1
                continue
            return -1
        n = _utf8(buf, p, end)
        if n < 0:
            return -1
        p += n
    return -1


@njit(cache=True)
def _any_key(buf, p, end):
    """An object key (any string) and its colon at p: the position after the colon, or -1."""
    p = _any_string(buf, p, end)
    if p < 0:
        return -1
    p = _ws(buf, p, end)
    if p >= end or buf[p] != _COLON:
        return -1
    return p + 1


@njit(cache=True)
def _skip_value(buf, p, end):
    """Any JSON value (an unknown key's, ignored by the typed decoder), nested at most _MAX_DEPTH deep."""
    stack = np.empty(_MAX_DEPTH, np.uint8)
    depth = 0
    while True:
        p = _ws(buf, p, end)
        if p >= end:
            return -1
        c = buf[p]
        if c == _LBRACE or c == _LBRACKET:
            if depth == _MAX_DEPTH:
                return -1
            stack[depth] = c
            depth += 1
            p = _ws(buf, p + 1, end)
            if p < end and buf[p] == (_RBRACE if c == _LBRACE else _RBRACKET):
                depth -= 1
                p += 1
            elif c == _LBRACE:
                p = _any_key(buf, p, end)  # the first key
                if p < 0:
                    return -1
                continue
            else:
                continue
        elif c == _QUOTE:
            p = _any_string(buf, p, end)
        elif c == 45 or _digit(c):
            p = _number(buf, p, end)
        elif c == 116 and p + 4 <= end and buf[p + 1] == 114 and buf[p + 2] == 117 and buf[p + 3] == 101:
            p += 4
        elif c == 102 and p + 5 <= end and buf[p + 1] == 97 and buf[p + 2] == 108 and buf[p + 3] == 115:
            p = p + 5 if buf[p + 4] == 101 else -1
        elif c == 110 and p + 4 <= end and buf[p + 1] == 117 and buf[p + 2] == 108 and buf[p + 3] == 108:
            p += 4
        else:
            return -1
        if p < 0:
            return -1
        # After a value: close containers, or a comma and the next value (or key).
        while True:
            if depth == 0:
                return p
            p = _ws(buf, p, end)
            if p >= end:
                return -1
            closing = _RBRACE if stack[depth - 1] == _LBRACE else _RBRACKET
            if buf[p] == closing:
                depth -= 1
                p += 1
                continue
            if buf[p] != _COMMA:
                return -1
            p = _ws(buf, p + 1, end)
            if stack[depth - 1] == _LBRACE:
                p = _any_key(buf, p, end)
                if p < 0:
                    return -1
            break


@njit(cache=True, inline="always")
def _key(buf, p, end, names, name_offsets):
    """An object key at p (a plain string): (index into `names`, or len(names) for another key; the
    position after its colon), or (-1, -1)."""
    s, stop, _ = _plain_string(buf, p, end)
    if s < 0:
        return -1, -1
    which = len(name_offsets) - 1
    for k in range(len(name_offsets) - 1):
        a, b = name_offsets[k], name_offsets[k + 1]
        if b - a == stop - s:
            same = True
            for j in range(b - a):
                if names[a + j] != buf[s + j]:
                    same = False
                    break
            if same:
                which = k
                break
    q = _ws(buf, stop + 1, end)
    if q >= end or buf[q] != _COLON:
        return -1, -1
    return which, _ws(buf, q + 1, end)


@njit(cache=True)
def _three_part_id(buf, s, stop, out):
    """The text buf[s:stop] as f"{path_id}_{objId}_{k}" (REVERIE) of integers >= 0 without leading zeros,
    path_id < 2**31 and objId < 2**32: True and out = (path_id << 32 | objId, k)
    (`vlnkit.datasets.reverie.split_reverie_ids`, `pack_keys`)."""
    first = np.int64(0)
    second = np.int64(0)
    p = s
    for n in range(3):
        if p >= stop or buf[p] == 45:
            return False
        q = _integer(buf, p, stop, out)
        if q < 0 or (q - p > 1 and buf[p] == 48):
            return False
        if n == 0:
            first = out[0]
        elif n == 1:
            second = out[0]
        if n < 2:
            if q >= stop or buf[q] != 95:
                return False
            p = q + 1
        elif q != stop:
            return False
    if first >= (1 << 31) or second >= (1 << 32) or out[0] >= (1 << 62):
        return False
    out[1] = out[0]
    out[0] = (first << 32) | second
    return True


@njit(cache=True)
def _canonical_id(buf, s, stop, out):
    """The text buf[s:stop] as f"{path_id}_{k}" or f"{path_id}" (k = -1) of integers within 64 bits, written
    without leading zeros (`vlnkit.datasets.prediction_batches.canonical_instr_ids`): True and out = (path_id, k)."""
    p = _integer(buf, s, stop, out)
    if p < 0 or (p - s > 1 and buf[s] == 48) or (p - s > 2 and buf[s] == 45 and buf[s + 1] == 48):
        return False
    pid = out[0]
    if p == stop:
        out[0], out[1] = pid, -1
        return True
    if buf[p] != 95 or p + 1 >= stop or buf[p + 1] == 45:
        return False
    q = _integer(buf, p + 1, stop, out)
    if q != stop or (q - p - 1 > 1 and buf[p + 1] == 48):
        return False
    out[1] = out[0]
    out[0] = pid
    return True
