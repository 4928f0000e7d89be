"""Which items of a persistent vector changed: the positions a snapshot must rewrite.

A new state shares every unchanged part of its message vector with the state
before it (``SessionState`` uses pyrsistent's pure-Python trie). Comparing two
such vectors therefore skips every subtree that is the same object in both
and looks only at the leaves along the paths that were copied: the cost is
O(changes * depth), not O(length). For vectors of any other kind (or a
shorter new vector) ``changed_positions`` answers None and the caller
compares item by item.
"""

from __future__ import annotations

from typing import Any

from pyrsistent._pvector import PythonPVector

__all__ = ["changed_positions"]

_SHIFT = 5
"""log2 of the trie's branching factor (32): pyrsistent's ``SHIFT``."""


def changed_positions(old: Any, new: Any) -> list[int] | None:
    """Positions below ``len(old)`` whose item is not the same object in ``new``.

    Positions from ``len(old)`` on are new and not listed. None when either
    vector is not a pure-Python pyrsistent vector or ``new`` is shorter.
    """
    if type(old) is not PythonPVector or type(new) is not PythonPVector:
        return None
    count = len(old)
    if len(new) < count:
        return None
    changed: list[int] = []
    if old._tail_offset:
        root, shift = new._root, new._shift
        old_shift: int = old._shift
        while shift > old_shift:  # the new trie grew taller: the old one is its leftmost branch
            root, shift = root[0], shift - _SHIFT
        _walk(old._root, root, old_shift, 0, changed)
    start: int = old._tail_offset
    for offset, item in enumerate(old._tail):
        if new[start + offset] is not item:
            changed.append(start + offset)
    return changed


def _walk(old: list[Any], new: list[Any], shift: int, base: int, out: list[int]) -> None:
    if old is new:
        return
    if shift == 0:
        for offset, item in enumerate(old):
            if new[offset] is not item:
                out.append(base + offset)
        return
    lower = shift - _SHIFT
    for index, child in enumerate(old):
        _walk(child, new[index], lower, base + (index << shift), out)
