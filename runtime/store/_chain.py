"""The hash chain that makes a session's log tamper-evident, for every store.

Each stored event carries a hash chained to the one before it::

    hash(0) = sha256(b"amber-chain-1\\x00" + session_id as UTF-8)     (the session's genesis)
    hash(n) = sha256(hash(n - 1) as 32 bytes + canonical bytes of event n)

written as 64 lowercase hex digits. The canonical bytes of an event are its
compact body (``_compact.encode_body``: a deterministic function of the
event), or, for rows an Amber before schema 3 wrote, its full JSON as
``runtime.to_json`` gives it (fields in order, map keys sorted, no spaces).
So the chain is a property of the events, not of one store's encoding: a
store that keeps events in another form (compressed, ``jsonb``) recomputes
the canonical bytes to check a row. A row written by Amber before the chain
existed (schema 1) is hashed over its JSON text exactly as it was stored.

Every read that goes through events checks each row's hash against the hash
before it, so an edited, dropped or reordered row is named (its session and
seq), not replayed. A snapshot records the hash of the event it was built at
(``chain``), and each snapshot row carries a digest of its own text, so a
snapshot that was edited, or that belongs to another point of the log, is
named too. What the chain cannot tell by itself: a log cut short together
with its summary row (the last rows gone, nothing left to disagree). Record
a session's head hash elsewhere (``amber check`` prints them) to catch that,
or anyone rewriting the whole chain; the chain is a checksum, not a signature.
"""

from __future__ import annotations

import hashlib

from .._codec import to_json
from .._errors import CorruptRow
from .._events import Event
from ._compact import encode_body

__all__ = ["CHAIN_FORMAT", "ChainCheck", "digest", "genesis", "link"]

CHAIN_FORMAT = "amber-chain-1"
"""The name and version of the chain's rules, hashed into every genesis."""
_HEX_CHARS = 64


def genesis(session_id: str) -> str:
    """The hash before a session's first event."""
    return hashlib.sha256(
        CHAIN_FORMAT.encode() + b"\x00" + session_id.encode("utf-8", "surrogatepass")
    ).hexdigest()


def link(previous: str, canonical: bytes) -> str:
    """The hash of an event whose canonical JSON is ``canonical``, after ``previous``."""
    hasher = hashlib.sha256(bytes.fromhex(previous))
    hasher.update(canonical)
    return hasher.hexdigest()


def digest(text: bytes) -> str:
    """The digest a snapshot row carries of its own text (sha256, hex)."""
    return hashlib.sha256(text).hexdigest()


def _is_hash(value: object) -> bool:
    if type(value) is not str or len(value) != _HEX_CHARS:
        return False
    try:
        bytes.fromhex(value)
    except ValueError:
        return False
    return True


class ChainCheck:
    """Checks one session's rows in seq order, each against the hash before it.

    Args:
        session_id: the session.
        previous: the hash before the first row to check (``genesis`` for seq 1,
            else the hash stored with the row before, or a snapshot's ``chain``).
    """

    __slots__ = ("head", "session_id")

    def __init__(self, session_id: str, previous: str) -> None:
        self.session_id = session_id
        self.head = previous
        """The hash of the last row checked (the chain's head so far)."""

    def row(self, seq: int, stored: object, body: bytes, event: Event) -> str:
        """Check the row at ``seq``: ``stored`` must chain from the head; returns the new head.

        ``body`` is the row's JSON as stored; when it is not the canonical
        bytes (the store keeps another encoding), the canonical bytes of the
        decoded ``event`` are hashed instead: its compact body, or for a row an
        older Amber wrote, its full JSON.

        Raises:
            CorruptRow: naming the session and the seq.
        """
        if not _is_hash(stored):
            raise CorruptRow(
                f"Session {self.session_id!r} event seq {seq} has no valid checksum (got "
                f"{_shown(stored)}); the row was written by other software or damaged. "
                "Restore the file from a backup.",
                session_id=self.session_id,
                seq=seq,
            )
        assert isinstance(stored, str)
        if link(self.head, body) != stored and not any(
            canonical != body and link(self.head, canonical) == stored
            for canonical in (encode_body(event), to_json(event))
        ):
            raise CorruptRow(
                f"Session {self.session_id!r} event seq {seq} fails its checksum: the row "
                f"was changed after it was written, or a row before it was (the chain of "
                f"hashes breaks at seq {seq}). The log cannot be trusted past seq "
                f"{seq - 1}; restore the file from a backup.",
                session_id=self.session_id,
                seq=seq,
            )
        self.head = stored
        return stored


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:79] + "…"
