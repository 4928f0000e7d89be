"""Session leases with fencing tokens: at most one owner writes a session (DESIGN §10).

A lease row says who owns a session (``owner``), until when (``expires_at``)
and under which fencing token. ``acquire`` takes a free or expired lease and
adds one to its token: every takeover makes a token no earlier owner holds.
``renew`` pushes the expiry on while the token is still the owner's; once
another owner has taken the lease it raises ``LeaseLost``. A released lease
keeps its row (expired at once), so tokens only ever grow.

A lost lease stays in the store's ``held`` until ``release``, also once ``renew``
found it lost: every write to the session is refused meanwhile, never let through
unfenced.

Fencing: a store that holds a lease checks it in every write to that session,
in the write's own transaction, with ``SELECT … FOR SHARE`` on the lease row.
A takeover updates that row, so it waits for a write in flight to commit,
and a write after it sees the new token and is refused with ``LeaseLost``:
an owner that was paused, partitioned or slow cannot store one event after a
newer owner took over, whatever its clock says. Expiry only decides when a
takeover is allowed; the caller passes ``now`` (the store reads no clock),
so tests drive expiry with explicit times.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import datetime, timedelta

import attrs

from .._errors import InvalidArgument, LeaseLost
from ._db import Db

__all__ = [
    "Lease",
    "acquire",
    "check_fence",
    "current",
    "not_held",
    "release",
    "renew",
    "renew_all",
]


@attrs.frozen(kw_only=True)
class Lease:
    """A session's lease as one owner holds it."""

    session_id: str
    """The session."""
    owner: str
    """Who holds it (a worker's name)."""
    token: int
    """The fencing token: grows by one on every acquisition."""
    expires_at: datetime
    """When another owner may take it over."""


def _check_times(now: datetime, ttl: timedelta) -> datetime:
    if not isinstance(now, datetime) or now.utcoffset() is None:
        raise InvalidArgument(
            f"now must be a timezone-aware datetime (got {now!r}); use datetime.now(timezone.utc)."
        )
    if not isinstance(ttl, timedelta) or ttl <= timedelta(0):
        raise InvalidArgument(
            f"ttl must be a positive timedelta (got {ttl!r}), like timedelta(seconds=30)."
        )
    return now + ttl


def _check_owner(owner: object) -> str:
    if not isinstance(owner, str) or not owner or "\x00" in owner:
        raise InvalidArgument(
            f"owner must be a non-empty str without NUL (got {owner!r}); name the worker, "
            "like 'host:pid'."
        )
    return owner


def acquire(db: Db, session_id: str, *, owner: str, now: datetime, ttl: timedelta) -> Lease | None:
    """Take the session's lease if it is free, expired or already ``owner``'s; None if not.

    Every acquisition adds one to the token (the first is 1).
    """
    expires = _check_times(now, ttl)
    row = db.execute(
        "INSERT INTO leases (session_id, owner, token, expires_at) VALUES (?, ?, 1, ?) "
        "ON CONFLICT (session_id) DO UPDATE SET owner = excluded.owner, "
        "token = leases.token + 1, expires_at = excluded.expires_at "
        "WHERE leases.expires_at <= ? OR leases.owner = excluded.owner "
        "RETURNING token, expires_at",
        (session_id, _check_owner(owner), expires, now),
    ).fetchone()
    if row is None:
        return None
    return Lease(session_id=session_id, owner=owner, token=int(row[0]), expires_at=row[1])


def renew(db: Db, lease: Lease, *, now: datetime, ttl: timedelta) -> Lease:
    """The lease with its expiry pushed to ``now + ttl``.

    Raises:
        LeaseLost: another owner took the lease over (its token grew).
    """
    expires = _check_times(now, ttl)
    row = db.execute(
        "UPDATE leases SET expires_at = ? WHERE session_id = ? AND owner = ? AND token = ? "
        "RETURNING token, expires_at",
        (expires, lease.session_id, lease.owner, lease.token),
    ).fetchone()
    if row is None:
        raise lost(lease, current(db, lease.session_id), "renew")
    return attrs.evolve(lease, expires_at=row[1])


def renew_all(
    db: Db, leases: Sequence[Lease], *, now: datetime, ttl: timedelta
) -> dict[str, Lease | LeaseLost]:
    """Each lease with its expiry pushed to ``now + ttl``, in one statement, or the
    ``LeaseLost`` of one another owner took over (as ``renew`` raises it)."""
    expires = _check_times(now, ttl)
    if not leases:
        return {}
    rows = db.execute(
        "UPDATE leases SET expires_at = ? FROM unnest(?::text[], ?::text[], ?::bigint[]) "
        "AS mine(session_id, owner, token) WHERE leases.session_id = mine.session_id "
        "AND leases.owner = mine.owner AND leases.token = mine.token "
        "RETURNING leases.session_id, leases.expires_at",
        (
            expires,
            [lease.session_id for lease in leases],
            [lease.owner for lease in leases],
            [lease.token for lease in leases],
        ),
    ).fetchall()
    renewed = {str(row[0]): row[1] for row in rows}
    got: dict[str, Lease | LeaseLost] = {}
    for lease in leases:
        if lease.session_id in renewed:
            got[lease.session_id] = attrs.evolve(lease, expires_at=renewed[lease.session_id])
        else:
            got[lease.session_id] = lost(lease, current(db, lease.session_id), "renew")
    return got


def release(db: Db, lease: Lease) -> bool:
    """Give the lease up (it expires at once; its token stays). False if it was lost already."""
    row = db.execute(
        "UPDATE leases SET expires_at = '1970-01-01T00:00:00Z' WHERE session_id = ? AND owner = ? "
        "AND token = ? RETURNING token",
        (lease.session_id, lease.owner, lease.token),
    ).fetchone()
    return row is not None


def current(db: Db, session_id: str) -> Lease | None:
    """The session's lease as stored (None: nobody ever took it)."""
    row = db.execute(
        "SELECT owner, token, expires_at FROM leases WHERE session_id = ?", (session_id,)
    ).fetchone()
    if row is None:
        return None
    return Lease(session_id=session_id, owner=row[0], token=int(row[1]), expires_at=row[2])


def check_fence(db: Db, held: Mapping[str, Lease], sessions: Collection[str]) -> None:
    """Refuse a write to any of ``sessions`` whose lease this writer holds but lost.

    Locks the lease rows (``FOR SHARE``) until the write commits, so a takeover
    waits for it, and it sees a takeover that committed before.

    Raises:
        LeaseLost: naming the session and both tokens; nothing is stored.
    """
    mine = sorted(session_id for session_id in sessions if session_id in held)
    if not mine:
        return
    rows = db.execute(
        "SELECT session_id, owner, token, expires_at FROM leases WHERE session_id = ANY(?) "
        "ORDER BY session_id FOR SHARE",
        (mine,),
    ).fetchall()
    stored = {
        row[0]: Lease(session_id=row[0], owner=row[1], token=int(row[2]), expires_at=row[3])
        for row in rows
    }
    for session_id in mine:
        lease = held[session_id]
        now = stored.get(session_id)
        if now is None or now.token != lease.token or now.owner != lease.owner:
            raise lost(lease, now, "append to")


def not_held(lease: Lease, held: Lease | None) -> LeaseLost:
    """The error for a renewal of ``lease`` by a store that holds ``held`` instead."""
    if held is None:
        now = "it was given back here (or never taken). Take it again with acquire()."
    else:
        now = f"it holds token {held.token} now. Renew that one."
    return LeaseLost(
        f"Cannot renew session {lease.session_id!r}: this store does not hold its lease "
        f"({lease.owner!r} token {lease.token}) any more; {now}",
        session_id=lease.session_id,
        token=lease.token,
        current=None if held is None else held.token,
    )


def lost(lease: Lease, now: Lease | None, doing: str) -> LeaseLost:
    """The error for a writer whose lease ``lease`` is no longer the stored one (``now``)."""
    if now is None:
        what = "the lease row is gone"
    else:
        what = f"{now.owner!r} holds it now with token {now.token}"
    return LeaseLost(
        f"Cannot {doing} session {lease.session_id!r}: its lease was taken over ({lease.owner!r} "
        f"held token {lease.token}; {what}). Nothing was stored; stop running the session here "
        "and let its new owner go on.",
        session_id=lease.session_id,
        token=lease.token,
        current=None if now is None else now.token,
    )
