"""What a ``Source`` keeps of a long session besides timelines: its last span and its
count of events of each kind.

A mixin of ``Source``. A page of a long session reads the states it shows from
the nearest stored state (``load_span``); the session's last span is kept and
brought on with the events after it when the next page is near it (``_span``:
moving between seqs reads a few events), up to ``_SPAN_LIMIT`` states. The kind
filter reads the seqs it shows from the log's kind column, and the count of each
kind once per session, brought on with the rows stored since (``kinds``). Both
are kept for the ``_SPANS_KEPT`` sessions last read.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime

from runtime import Timeline
from runtime.store import SessionInfo, Store

from .._cli._app import require_session
from ._results import KindSeqs

__all__ = ["Spans"]

_SPAN_LIMIT = 5_000
"""The most states a session's kept span grows to before it is read anew."""
_SPANS_KEPT = 8
"""Sessions whose last span (and count of each kind) is kept."""


class Spans:
    """The kept spans and kind counts (mixed into ``Source``)."""

    db: str
    _lock: threading.Lock
    _spans: OrderedDict[str, tuple[datetime, Timeline]]
    _counts: OrderedDict[str, tuple[datetime, int, dict[str, int]]]

    def _store(self) -> AbstractContextManager[Store]:
        raise NotImplementedError

    def _span(
        self, store: Store, session_id: str, info: SessionInfo, first: int, last: int
    ) -> Timeline:
        """The states from ``first`` to ``last``: the session's last span brought on with
        the events after it when it holds ``first`` and stays under ``_SPAN_LIMIT`` states
        (moving between seqs reads a few events), else read anew (``load_span``)."""
        with self._lock:
            kept = self._spans.get(session_id)
        line: Timeline | None = None
        if (
            kept is not None
            and kept[0] == info.created_at
            and kept[1].first_seq <= first
            and kept[1].last_seq <= info.seq
            and last - kept[1].first_seq <= _SPAN_LIMIT
        ):
            line = kept[1]
            if line.last_seq < last:
                after = store.events_between(  # type: ignore[attr-defined]
                    session_id, line.last_seq + 1, last
                )
                line = line.extend(after)
        if line is None:
            line = store.load_span(session_id, first, last)  # type: ignore[attr-defined]
        with self._lock:
            self._spans[session_id] = (info.created_at, line)
            self._spans.move_to_end(session_id)
            while len(self._spans) > _SPANS_KEPT:
                self._spans.popitem(last=False)
        return line

    def kinds(
        self,
        session_id: str,
        kinds: Sequence[str],
        pivot: int,
        last: int,
        *,
        before: int,
        after: int,
    ) -> KindSeqs | None:
        """The seqs of the events of ``kinds`` up to ``last`` nearest ``pivot`` (``before``
        of them before it, ``after`` from it on) and the count of each kind up to ``last``,
        from the log's kind column (``kind_seqs``, ``kind_counts``): the counts are read
        once per session and brought on with the rows stored since. None for a store that
        cannot read them (the page then reads every event).

        Raises:
            CliError: no such session, or the store cannot be read.
        """
        with self._store() as store:
            require_session(store, session_id, self.db)
            if not hasattr(store, "kind_seqs") or not hasattr(store, "kind_counts"):
                return None
            info = store.session(session_id)
            seqs = store.kind_seqs(session_id, kinds, pivot, before=before, after=after, last=last)
            with self._lock:
                kept = self._counts.get(session_id)
            if kept is None or kept[0] != info.created_at or kept[1] > last:
                kept = (info.created_at, 0, {})
            created_at, upto, counts = kept
            if upto < last:
                counts = dict(counts)
                for kind, n in store.kind_counts(session_id, upto + 1, last).items():
                    counts[kind] = counts.get(kind, 0) + n
            with self._lock:
                self._counts[session_id] = (created_at, last, counts)
                self._counts.move_to_end(session_id)
                while len(self._counts) > _SPANS_KEPT:
                    self._counts.popitem(last=False)
        return KindSeqs(before=seqs[0], after=seqs[1], counts=counts)
