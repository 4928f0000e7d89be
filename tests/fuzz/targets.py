"""The entry points the fuzz suite drives, each with its oracle.

A target takes one input and returns the name of what happened (``"accepted"``
or the class of a clean refusal). Whatever the input, a target must end in
one of two ways:

- **refused cleanly**: an ``AmberError`` (the documented refusal: ``DecodeError``,
  ``InvalidInput``, ``CorruptRow`` …), and nothing was stored;
- **accepted**, and then what was stored reads back unchanged (the oracle
  compares it with an independent expectation: the value itself, a replay of
  the original events, …).

Anything else raises ``Unhandled`` (an exception that is not an ``AmberError``)
or ``WrongState`` (accepted, but what reads back is not what should): the
two counts the fuzz run reports, both of which must be 0.

The Hypothesis tests (``test_fuzz_*.py``) and the campaign (``campaign.py``)
feed the same targets.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import shutil
import sqlite3
import tempfile
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from runtime import (
    AmberError,
    AuditRow,
    Event,
    Message,
    SessionState,
    Turn,
    UserInput,
    from_data,
    from_json,
    replay,
    to_json,
    validate_input,
)
from runtime.store import MemoryStore, SQLiteStore

__all__ = [
    "KINDS",
    "StoreFixture",
    "Unhandled",
    "WrongState",
    "append_events",
    "damaged_store",
    "decode_bytes",
    "decode_data",
    "make_input",
    "run_cli",
]

KINDS: tuple[type, ...] = (Event, Message, Turn, SessionState, AuditRow)
"""What the codec decodes."""
T0 = datetime(2026, 5, 27, 12, 50, tzinfo=UTC)


class Unhandled(Exception):
    """An entry point raised something that is not an ``AmberError``."""


class WrongState(Exception):
    """An entry point accepted an input, and what reads back is not what it should be."""


@contextlib.contextmanager
def guarded(what: str) -> Iterator[None]:
    """Turn any non-Amber exception into ``Unhandled`` naming ``what``."""
    try:
        yield
    except AmberError:
        raise
    except (Unhandled, WrongState):
        raise
    except RecursionError as exc:
        raise Unhandled(f"{what}: RecursionError: {str(exc)[:200]}") from exc
    except Exception as exc:
        raise Unhandled(f"{what}: {type(exc).__name__}: {str(exc)[:300]}") from exc


def _round_trip(value: Any, kind: type, what: str) -> None:
    """The oracle of every accepted value: it encodes, reads back equal, encodes the same."""
    with guarded(f"{what}: encoding an accepted value"):
        once = to_json(value)
        again = from_json(once, kind)
    if again != value:
        raise WrongState(f"{what}: {kind.__name__} read back differs from what was accepted")
    with guarded(f"{what}: encoding it again"):
        twice = to_json(again)
    if twice != once:
        raise WrongState(f"{what}: {kind.__name__} encodes differently after a round trip")


def decode_bytes(raw: bytes, kind: type) -> str:
    """``from_json(raw, kind)``: a DecodeError, or a value that round-trips."""
    try:
        with guarded(f"from_json({kind.__name__})"):
            value = from_json(raw, kind)
    except AmberError as exc:
        return type(exc).__name__
    _round_trip(value, kind, f"from_json({kind.__name__})")
    return "accepted"


def decode_data(data: Any, kind: type) -> str:
    """``from_data(data, kind)``: a DecodeError, or a value that round-trips."""
    try:
        with guarded(f"from_data({kind.__name__})"):
            value = from_data(data, kind)
    except AmberError as exc:
        return type(exc).__name__
    _round_trip(value, kind, f"from_data({kind.__name__})")
    return "accepted"


def make_input(fields: dict[str, Any], session_id: Any) -> str:
    """``UserInput(**fields)``, ``validate_input`` and ``to_message``: InvalidInput, or a
    message that round-trips with the text that was typed."""
    try:
        with guarded("UserInput"):
            user_input = UserInput(**fields)
            validate_input(user_input)
            message = user_input.to_message(id="m1", session_id=session_id, created_at=T0)
    except AmberError as exc:
        return type(exc).__name__
    if message.content != user_input.text or message.session_id != session_id:
        raise WrongState("UserInput.to_message changed the text or the session")
    _round_trip(message, Message, "UserInput.to_message")
    return "accepted"


def append_events(base: Sequence[Event], extra: Sequence[Any], store: Any) -> str:
    """Append a valid log, then ``extra`` (fuzzed events or junk) to ``store``.

    Accepted: the store's head, timeline and events equal a replay of what was
    accepted. Refused: nothing of the batch was stored.
    """
    with guarded("append(base)"):
        store.append(list(base))
    session_id = base[0].session_id
    before = list(base)
    try:
        with guarded("append(fuzzed)"):
            store.append(list(extra))
    except AmberError as exc:
        with guarded("reading after a refusal"):
            stored = store.events(session_id)
        if stored != before:
            raise WrongState("a refused batch left events behind") from exc
        return type(exc).__name__
    accepted = before + [e for e in extra if getattr(e, "session_id", None) == session_id]
    with guarded("reading after an append"):
        stored = store.events(session_id)
        head = store.load_state(session_id)
        timeline = store.load_timeline(session_id)
    expected = replay(accepted)
    if stored != accepted or head != expected.head or timeline.head != expected.head:
        raise WrongState("the store's log or head differs from the replay of what it accepted")
    return "accepted"


class StoreFixture:
    """A sound store file made once; each input damages a fresh copy of it."""

    def __init__(self, folder: pathlib.Path, events: dict[str, list[Event]], snapshot_every: int):
        self.folder = folder
        self.events = events
        self.snapshot_every = snapshot_every
        self.path = folder / "sound.db"
        with SQLiteStore(self.path, snapshot_every=snapshot_every) as store:
            for log in events.values():
                for start in range(0, len(log), 7):
                    store.append(log[start : start + 7])
        self.heads = {sid: replay(log) for sid, log in events.items()}
        with SQLiteStore(self.path, snapshot_every=snapshot_every) as store:
            self.infos = {info.session_id: info for info in store.list_sessions()}
        self._copies = 0

    def copy(self) -> pathlib.Path:
        """A fresh copy of the sound file (the WAL is checkpointed into it)."""
        self._copies += 1
        target = self.folder / f"copy{self._copies}.db"
        for suffix in ("-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.remove(f"{target}{suffix}")
        shutil.copyfile(self.path, target)
        return target


Damage = Callable[[sqlite3.Connection], None]


def damaged_store(fixture: StoreFixture, damage: Damage) -> str:
    """Damage a copy of a sound store with ``damage`` (SQL over a plain connection), then
    read it through every API.

    Every read either raises an ``AmberError`` or gives exactly what the sound
    store gives; if any read raises ``CorruptRow``, ``check()`` must report a problem.
    """
    path = fixture.copy()
    db = sqlite3.connect(path, isolation_level=None)
    try:
        damage(db)
    except sqlite3.Error:
        pass  # the damage itself did not apply (a constraint): the store is as it was
    finally:
        db.close()
    outcomes: list[str] = []
    try:
        with guarded("SQLiteStore()"):
            store = SQLiteStore(path, snapshot_every=fixture.snapshot_every)
    except AmberError as exc:
        return type(exc).__name__
    try:
        corrupt = False
        for name, read, expected in _reads(store, fixture):
            try:
                with guarded(name):
                    got = read()
            except AmberError as exc:
                outcomes.append(type(exc).__name__)
                corrupt = corrupt or type(exc).__name__ in ("CorruptRow", "ReplayMismatch")
                continue
            if got != expected:
                raise WrongState(f"{name} returned something other than the sound store's")
        with guarded("check()"):
            report = store.check()
        if corrupt and report.ok:
            raise WrongState("a read reported damage that check() does not see")
        if not report.ok and report.rebuildable:
            with guarded("rebuild()"):
                store.rebuild()
            for name, read, expected in _reads(store, fixture):
                try:
                    with guarded(f"{name} after rebuild()"):
                        got = read()
                except AmberError as exc:
                    raise WrongState(f"{name} still fails after rebuild(): {exc}") from exc
                if got != expected:
                    raise WrongState(f"{name} after rebuild() differs from the sound store's")
    finally:
        store.close()
    return "+".join(sorted(set(outcomes))) or "accepted"


def _reads(
    store: SQLiteStore, fixture: StoreFixture
) -> Iterator[tuple[str, Callable[[], Any], Any]]:
    for session_id, timeline in fixture.heads.items():
        yield f"load_state({session_id})", lambda s=session_id: store.load_state(s), timeline.head
        yield (
            f"load_timeline({session_id})",
            lambda s=session_id: list(store.load_timeline(s).states()),
            list(timeline.states()),
        )
        yield (
            f"events({session_id})",
            lambda s=session_id: store.events(s),
            fixture.events[session_id],
        )
        yield (
            f"session({session_id})",
            lambda s=session_id: _info(store.session(s)),
            _info(fixture.infos[session_id]),
        )
        yield f"verify({session_id})", lambda s=session_id: store.verify(s).head, timeline.head
    yield (
        "list_sessions()",
        lambda: sorted(_info(i) for i in store.list_sessions()),
        sorted(_info(i) for i in fixture.infos.values()),
    )


def _info(info: Any) -> tuple[Any, ...]:
    # The snapshot seq is derived bookkeeping a rebuild may change; the rest is the session.
    return (
        info.session_id,
        info.seq,
        info.created_at,
        info.updated_at,
        info.messages,
        tuple(sorted(info.counts.items())),
        info.active_turn_id,
        info.active_turn_started_at,
    )


def run_cli(runner: Any, args: list[str]) -> str:
    """One ``amber`` command line: a documented exit code, one-line errors, no traceback."""
    from actors._cli import ExitCode, cli

    result = runner.invoke(cli, args, catch_exceptions=True)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise Unhandled(
            f"amber {args!r:.200}: {type(result.exception).__name__}: {result.exception}"
        )
    codes = {int(code) for code in ExitCode}
    if result.exit_code not in codes:
        raise WrongState(f"amber {args!r:.200} exited {result.exit_code}, not a documented code")
    if "Traceback (most recent call last)" in result.output:
        raise Unhandled(f"amber {args!r:.200} printed a traceback")
    return f"exit {result.exit_code}"


def memory_store() -> MemoryStore:
    """A fresh in-memory store."""
    return MemoryStore(snapshot_every=3)


def temp_folder() -> pathlib.Path:
    """A fresh temporary folder (the caller removes it), in memory where the machine has
    a tmpfs: a campaign writes thousands of small stores, and fsync on a disk dominates."""
    shm = pathlib.Path("/dev/shm")
    where = str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None
    return pathlib.Path(tempfile.mkdtemp(prefix="amber-fuzz-", dir=where))


def at(seconds: int) -> datetime:
    """T0 plus ``seconds``."""
    return T0 + timedelta(seconds=seconds)
