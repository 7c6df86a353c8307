"""One key of every object of a JSON array, checked as a whole: numpy arrays, no loop per object.

``json.loads`` gives a list of dicts; a file with a million nodes has a million of them. The
loader reads each key it needs as a *column* (one list comprehension), checks the types of the
whole column at once (``set(map(type, column))``), converts it with numpy and checks ranges
vectorized. Only when a column holds something wrong does it walk the objects one by one, with
the scalar checks of :class:`vkdqs.gltf.accessors._AccessorReader`, to name the first bad one in
the message exactly as they do. So a well-formed file costs a few C-level passes per key, and a
malformed one at most one more linear pass.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from itertools import chain, repeat
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from vkdqs.gltf.accessors import _AccessorReader


class _Missing:
    """The value of a key an object does not have (JSON ``null`` is ``None``, a value)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING = _Missing()


def column(items: Sequence[dict], key: str) -> list[Any]:
    """``items[i][key]`` for every object, :data:`MISSING` where it has no such key."""
    return [item.get(key, MISSING) for item in items]


def present(col: list[Any]) -> NDArray[np.bool_]:
    """Which entries of a column are there (not :data:`MISSING`)."""
    return np.fromiter(map(operator.is_not, col, repeat(MISSING)), dtype=bool, count=len(col))


def _types(values: Sequence[Any]) -> set[type]:
    kinds = set(map(type, values))
    kinds.discard(_Missing)
    return kinds


def _never(path: str) -> NoReturn:
    raise AssertionError(f"{path}: a column check found a problem the scalar check did not")


def ints(
    r: _AccessorReader,
    values: Sequence[Any],
    path_of: Callable[[int], str],
    *,
    target: str | None = None,
    minimum: int | None = None,
) -> NDArray[np.int64]:
    """The integers of a column (-1 where :data:`MISSING`): JSON integers (``3.0`` too, as
    :meth:`~vkdqs.gltf.accessors._AccessorReader.as_int` allows), each ``>= minimum`` and, with
    ``target`` (a top-level array), an index into it. ``path_of(i)`` is entry i's JSON path."""
    n = len(values)
    every = set(map(type, values))
    kinds = every - {_Missing}
    if not kinds:
        return np.full(n, -1, dtype=np.int64)
    there = present(values) if _Missing in every else np.ones(n, dtype=bool)
    out = None
    if kinds == {int}:
        obj = np.fromiter(values, dtype=object, count=n)
        obj[~there] = -1
        try:
            out = obj.astype(np.int64)
        except OverflowError:  # an integer beyond int64: converted one by one below
            out = None
    if out is None:
        # floats, booleans, strings or huge integers: one by one, the first bad entry named by
        # the scalar check
        out = np.full(n, -1, dtype=np.int64)
        for i in np.flatnonzero(there).tolist():  # only for a column that is not plain ints
            x = r.as_int(values[i], path_of(i), minimum=minimum)
            if not -(2**63) <= x < 2**63:
                if target is not None:
                    r.as_index(x, path_of(i), target)
                r.fail(path_of(i), f"{x} is out of range")
            out[i] = x
    if minimum is not None:
        bad = there & (out < minimum)
        if bad.any():
            i = int(np.argmax(bad))
            r.as_int(values[i], path_of(i), minimum=minimum)
            _never(path_of(i))
    if target is not None:
        limit = len(r.array(target))
        bad = there & ((out < 0) | (out >= limit))
        if bad.any():
            i = int(np.argmax(bad))
            r.as_index(values[i], path_of(i), target)
            _never(path_of(i))
    return out


def int_lists(
    r: _AccessorReader, col: list[Any], path_of: Callable[[int], str], target: str
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """A column of arrays of indices into ``target`` (``children``): the flat indices, the
    object each came from and its position in that object's array."""
    rows = np.flatnonzero(present(col))
    lists = [col[i] for i in rows.tolist()]
    if _types(lists) - {list}:
        for i in rows.tolist():  # a column holding something other than arrays: name it
            if not isinstance(col[i], list):
                r.fail(path_of(i), f"must be an array, got {_show_value(col[i])}")
    counts = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
    owners = np.repeat(rows, counts)
    starts = np.cumsum(counts) - counts
    within = np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(starts, counts)
    flat = list(chain.from_iterable(lists))
    values = ints(r, flat, lambda k: f"{path_of(int(owners[k]))}[{int(within[k])}]", target=target)
    return values, owners, within


def numbers(
    r: _AccessorReader,
    items: Sequence[dict],
    col: list[Any],
    key: str,
    item_path: Callable[[int], str],
    width: int,
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """The rows of a column of arrays of ``width`` finite numbers (``translation``): the
    objects that have one, and their values ``[rows, width]``. ``item_path(i)`` is the JSON
    path of object i (the key is added to it)."""
    rows = np.flatnonzero(present(col))
    lists = [col[i] for i in rows.tolist()]
    ok = not (_types(lists) - {list})
    if ok:
        lengths = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
        ok = bool((lengths == width).all())
    values = np.zeros((0, width))
    if ok:
        flat = list(chain.from_iterable(lists))
        ok = not (_types(flat) - {int, float})
        if ok:
            try:
                values = np.array(flat, dtype=np.float64).reshape(-1, width)
            except OverflowError:  # an integer beyond float range
                ok = False
        ok = ok and bool(np.isfinite(values).all())
    if not ok:
        for i in rows.tolist():  # the first bad entry raises, named by the scalar check
            r.get_numbers(items[i], key, item_path(i), width, [])
        _never(f"{item_path(int(rows[0]))}.{key}")
    return rows, values


def names(r: _AccessorReader, col: list[Any], path_of: Callable[[int], str]) -> list[str]:
    """A column of ``name`` strings (``""`` where :data:`MISSING`). A name changes nothing vkdqs
    skins or draws: one that is not a string leaves its object unnamed, with one warning naming
    the first (and how many there are)."""
    if not (_types(col) - {str}):
        return ["" if v is MISSING else v for v in col]
    bad = [i for i, v in enumerate(col) if v is not MISSING and not isinstance(v, str)]
    more = f" ({len(bad) - 1} more like it)" if len(bad) > 1 else ""
    r.warn(path_of(bad[0]), f"must be a string, got {_show_value(col[bad[0]])}; left unnamed{more}")
    return [v if isinstance(v, str) else "" for v in col]


def _show_value(value: Any) -> str:
    from vkdqs.gltf.errors import _show

    return _show(value)
