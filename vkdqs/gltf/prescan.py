"""Limits found in a glTF document's JSON text before it is parsed (:func:`oversized_skin`).

``json.loads`` materializes every value: a skin of a million joints comes with a million node
objects, hundreds of megabytes of Python objects, all built before the reader can see the skin
and refuse it. A skin's ``joints`` is a flat array of integers, which the text shows without
parsing: the scan looks for ``"joints"`` arrays longer than the limit (a few ``bytes.find``
calls; nothing is allocated for an ordinary file) and, only for such an array, works out where
it is in the document from the text's structure (numpy over the bytes: the characters outside
strings, their bracket depth), so that only ``skins[k].joints`` is refused and a long array
of the same name elsewhere (an extension's) is left to the parser.
"""

from __future__ import annotations

import numpy as np

__all__ = ["oversized_skin"]

_WHITE = b" \t\r\n"


def _arrays_of(raw: bytes | bytearray, key: bytes):
    """The offsets of the ``[`` of every ``"key": [`` in ``raw`` (JSON white space allowed)."""
    at = raw.find(key)
    while at >= 0:
        i = at + len(key)
        while i < len(raw) and raw[i] in _WHITE:
            i += 1
        if i < len(raw) and raw[i] == ord(":"):
            i += 1
            while i < len(raw) and raw[i] in _WHITE:
                i += 1
            if i < len(raw) and raw[i] == ord("["):
                yield i
        at = raw.find(key, at + 1)


def _keyed(raw: bytes | bytearray, at: int, key: bytes) -> bool:
    """Whether the ``[`` at ``at`` is the value of ``"key"``."""
    head = bytes(raw[max(0, at - 256) : at]).rstrip(_WHITE)
    return head.endswith(b":") and head[:-1].rstrip(_WHITE).endswith(key)


def oversized_skin(data: bytes | bytearray | memoryview, limit: int) -> tuple[int, int] | None:
    """``(k, count)`` for the first ``skins[k].joints`` array of more than ``limit`` values
    in the JSON text ``data``, or None (the text is not checked for validity: the parser
    does that)."""
    raw = data if isinstance(data, (bytes, bytearray)) else bytes(data)  # .find, slices
    for start in _arrays_of(raw, b'"joints"'):  # each one's '['
        end = raw.find(b"]", start)
        if end < 0:
            return None
        body = raw[start + 1 : end]
        if b"[" in body or b"{" in body or b'"' in body:
            continue  # not a flat array of numbers: no skin's joints
        count = body.count(b",") + 1
        if count <= limit:
            continue
        k = _skin_index(raw, start)
        if k is not None:
            return k, count
    return None


# Array comparisons are np.equal calls, not ==: under the fuzzer's instrumentation of
# comparison operators (atheris), == on arrays grew make fuzz-short's process from 100 MB to
# 1.4 GB in 8000 runs; function calls are not instrumented.

#: Bytes of text the structure is worked out for at once (bounds the scan's memory).
CHUNK = 1 << 22
_MARKS = np.frombuffer(b"{}[],", np.uint8)


def _real_quotes(b: np.ndarray, escaped: bool) -> tuple[np.ndarray, bool]:
    """Positions in ``b`` of the quotes that open or close strings (not after an odd run of
    backslashes; ``escaped``: ``b[0]`` follows one), and whether the byte after ``b``
    does."""
    quotes = np.flatnonzero(np.equal(b, ord('"')))
    slashes = np.flatnonzero(np.equal(b, ord("\\")))
    if escaped and len(b):  # a run carried over: count it as one backslash before byte 0
        slashes = np.concatenate([[-1], slashes])
    if not len(slashes):
        return quotes, False
    new_run = np.ones(len(slashes), bool)
    new_run[1:] = np.not_equal(np.diff(slashes), 1)
    starts = np.flatnonzero(new_run)
    ends = np.append(starts[1:], len(slashes)) - 1
    run_end, odd = slashes[ends], np.equal((ends - starts + 1) % 2, 1)
    carry = bool(run_end[-1] == len(b) - 1 and odd[-1])
    if len(quotes):
        k = np.minimum(np.searchsorted(run_end, quotes - 1), len(run_end) - 1)
        quotes = quotes[~(np.equal(run_end[k], quotes - 1) & odd[k])]
    return quotes, carry


def _skin_index(raw: bytes | bytearray, at: int) -> int | None:
    """``k`` where the array opened at byte ``at`` is ``skins[k].joints`` of the root object
    (the array's key is known to be "joints"), else None. The text before it is scanned in
    chunks of :data:`CHUNK` bytes, carrying the string state, the depth, the last opener of
    each depth and the commas at depth 2 since the last depth-2 opener."""
    depth, in_string, escaped = 0, False, False
    last = {1: -1, 2: -1, 3: -1}
    commas = 0  # at depth 2 (between skins), since the last opener at depth 2
    for start in range(0, at, CHUNK):
        b = np.frombuffer(raw, np.uint8, count=min(CHUNK, at - start), offset=start)
        quotes, escaped = _real_quotes(b, escaped)
        marks = np.flatnonzero(np.isin(b, _MARKS))
        parity = (np.searchsorted(quotes, marks, side="right") + in_string) % 2
        marks = marks[np.equal(parity, 0)]  # outside strings
        in_string = (len(quotes) + in_string) % 2 == 1
        chars = b[marks]
        opens = np.equal(chars, ord("{")) | np.equal(chars, ord("["))
        closes = np.equal(chars, ord("}")) | np.equal(chars, ord("]"))
        after = depth + np.cumsum(opens.astype(np.int64) - closes)  # the depth after each
        if len(after) and after.min() < 1:
            return None  # the root closed, or no root yet
        for d in last:
            found = np.flatnonzero(opens & np.equal(after, d))
            if len(found):
                last[d] = start + int(marks[found[-1]])
        at_two = np.equal(chars, ord(",")) & np.equal(after, 2)
        opened_two = np.flatnonzero(opens & np.equal(after, 2))
        if len(opened_two):
            commas = int(np.count_nonzero(at_two[opened_two[-1] :]))
        else:
            commas += int(np.count_nonzero(at_two))
        if len(after):
            depth = int(after[-1])
    if in_string or depth != 3 or min(last.values()) < 0:
        return None
    root, skins, skin = last[1], last[2], last[3]
    if raw[root : root + 1] != b"{" or raw[:root].strip(b" \t\r\n\xef\xbb\xbf"):
        return None  # the outermost object is not the document's root
    if raw[skins : skins + 1] != b"[" or raw[skin : skin + 1] != b"{":
        return None
    if not _keyed(raw, skins, b'"skins"'):
        return None
    return commas
