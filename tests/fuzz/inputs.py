"""Fuzzed inputs, from a seeded ``random.Random``: fast enough for a million of them.

Each generator starts from something valid (a real session's events, their
JSON, an input a person could type, a sound store) and mutates it the ways
the fuzzing run of issue 15 did: odd values (lone surrogates, integers beyond
64 bits, NaN, deep nesting, wrong types), structural edits (missing and
unknown keys, wrong containers), byte edits of JSON text, and SQL edits of a
store's rows. The Hypothesis tests draw the ``random.Random`` from
Hypothesis (``st.randoms()``), so a failure is replayed by its seed.
"""

from __future__ import annotations

import contextlib
import copy
import importlib.util
import pathlib
import random
import sqlite3
import zlib
from typing import Any

import orjson

from runtime import (
    AuditCall,
    Category,
    Event,
    MessageAdded,
    MetadataUpdated,
    ModelCallFinished,
    ModelCallStarted,
    RolledBack,
    SessionState,
    TurnEnded,
    TurnStarted,
    Usage,
    apply,
    new_message,
    to_data,
    to_json,
)

from .targets import at

__all__ = [
    "ODD",
    "cli_args",
    "corpus",
    "damage",
    "events_after",
    "input_fields",
    "json_bytes",
    "python_data",
    "session_log",
]

_SCENARIO = pathlib.Path(__file__).parent.parent / "runtime" / "store" / "scenario.py"
_spec = importlib.util.spec_from_file_location("amber_fuzz_scenario", _SCENARIO)
assert _spec is not None
assert _spec.loader is not None
scenario = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(scenario)


def _deep(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    return value


# Shared, never copied or edited (mutations do not descend into it). Lists, not
# tuples: orjson 3.13 has no depth limit for tuples and corrupts its heap on deep ones.
_DEEPEST: Any = _deep(2000)
ODD: list[Any] = [
    None, True, False, 0, -1, 1, 7, 2**53, 2**53 + 1, 2**63 - 1, 2**63, 2**64 - 1, 2**64,
    -(2**63), -(2**63) - 1, 10**30, 10**400, 1.5, -0.0, 1e308, float("inf"), float("nan"),
    "", " ", "x", "\x00", "\x1b[31m", "\ud800", "a\udcff", "é", "会话", "😀", "\u202e", "x" * 5000,
    [], {}, [1, "a"], {"k": "v"}, {"\ud800": 1}, {1: 2}, _deep(70), {"k": _deep(70)}, _DEEPEST,
    b"bytes", {1, 2}, (1, 2), object(), "2026-05-27T12:50:00", "2026-05-27T12:50:00+00:00",
    "processing", "message_added", "pending", "s", "m1",
]  # fmt: skip
"""Values the mutations put in place of a field."""


def session_log(session_id: str = "s", count: int = 30) -> list[Event]:
    """A valid log: the store tests' scripted session, with model calls, metadata and a
    rollback mixed in."""
    events: list[Event] = []
    state = SessionState.empty(session_id)

    def push(event: Event) -> None:
        nonlocal state
        state = apply(state, event)
        events.append(event)

    while len(events) < count:
        seq = state.seq + 1
        if state.active_turn is None and seq % 9 == 0 and state.messages:
            push(
                MetadataUpdated(
                    session_id=session_id, seq=seq, at=at(seq),
                    message_id=state.messages[-1].id,
                    metadata={"z": 1, "a": {"nested": [1, 2.5, None, "é"]}, "m": True},
                )
            )  # fmt: skip
            continue
        push(scenario.next_event(state, at(seq)))
    if state.active_turn is None:
        _audit_turn(state, push)
        push(RolledBack(session_id=session_id, seq=state.seq + 1, at=at(state.seq + 1), to_seq=3))
    return events


def _audit_turn(state: SessionState, push: Any) -> None:
    """A turn with a model call (audit rows) and a reply."""
    sid, seq = state.session_id, state.seq
    turn = f"ta{seq}"
    question = new_message(
        Category.USER_QUESTION, id=f"qa{seq}", session_id=sid, created_at=at(seq + 1),
        sender="Chii", content="and the weather?", metadata={"b": [1, {"c": None}], "a": 2},
    )  # fmt: skip
    push(MessageAdded(session_id=sid, seq=seq + 1, at=at(seq + 1), message=question))
    push(TurnStarted(session_id=sid, seq=seq + 2, at=at(seq + 2), turn_id=turn))
    push(
        ModelCallStarted(
            session_id=sid, seq=seq + 3, at=at(seq + 3), operation_id=f"op{seq}",
            source_key=f"{turn}#1", turn_id=turn, sequence=1, model="scripted",
        )
    )  # fmt: skip
    push(
        ModelCallFinished(
            session_id=sid, seq=seq + 4, at=at(seq + 4), operation_id=f"op{seq}",
            status="completed", duration_ms=3.5, usage=Usage(input_tokens=9, output_tokens=4),
            content="sunny", tool_calls=[AuditCall(id="c", name="sh", arguments_json='{"a": 1}')],
            stop_reason="end_turn",
        )
    )  # fmt: skip
    reply = new_message(
        Category.REPLY, id=f"ra{seq}", session_id=sid, created_at=at(seq + 5), turn_id=turn,
        content="Sunny, 21 °C.",
    )  # fmt: skip
    push(MessageAdded(session_id=sid, seq=seq + 5, at=at(seq + 5), message=reply))
    push(
        TurnEnded(
            session_id=sid, seq=seq + 6, at=at(seq + 6), turn_id=turn, outcome="processed",
            metrics={"tokens": 13, "tool_calls": 0}, duration_ms=12,
        )
    )  # fmt: skip


def corpus() -> list[tuple[type, Any]]:
    """Valid values to start from: ``(kind, value)`` for every event, message, turn, state."""
    from runtime import AuditRow, Message, Turn, replay

    log = session_log("s", 40)
    timeline = replay(log)
    items: list[tuple[type, Any]] = [(Event, event) for event in log]
    head = timeline.head
    items += [(Message, message) for message in head.messages]
    items += [(Turn, turn) for turn in head.turn_list()]
    items += [(AuditRow, row) for row in head.model_calls()]
    items += [(SessionState, timeline.at(seq)) for seq in (0, 5, 17, timeline.last_seq)]
    question = new_message(
        Category.USER_QUESTION, id="q", session_id="s", created_at=at(0), sender="Chii",
        content="hi", metadata={"b": [1, {"c": None}], "a": 2**64 - 1},
    )  # fmt: skip
    items.append((Event, MessageAdded(session_id="s", seq=1, at=at(1), message=question)))
    return items


# -- mutations of plain data ----------------------------------------------------------------


def _fresh(value: Any) -> Any:
    """A copy of ``value`` to mutate (the very deep odd values are shared, never mutated)."""
    if value is _DEEPEST:
        return value
    try:
        return copy.deepcopy(value)
    except RecursionError:
        return value


def _paths(value: Any, prefix: tuple[Any, ...] = (), depth: int = 0) -> list[tuple[Any, ...]]:
    found = [prefix]
    if depth > 6 or value is _DEEPEST:
        return found
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*prefix, key), depth + 1)
    elif isinstance(value, list):
        for index, item in enumerate(value[:8]):
            found += _paths(item, (*prefix, index), depth + 1)
    return found


def _set(root: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    parent = root
    for step in path[:-1]:
        parent = parent[step]
    parent[path[-1]] = value
    return root


def mutate_data(rng: random.Random, data: Any, odd: list[Any] | None = None) -> Any:
    """``data`` (plain JSON-like) with one to three structural mutations."""
    odd = ODD if odd is None else odd
    data = copy.deepcopy(data)
    for _ in range(rng.randint(1, 3)):
        paths = _paths(data)
        path = rng.choice(paths)
        target = data
        for step in path:
            target = target[step]
        roll = rng.random()
        if target is _DEEPEST:  # shared by every example: replaced, never edited in place
            roll = min(roll, 0.44)
        if roll < 0.45:
            data = _set(data, path, _fresh(rng.choice(odd)))
        elif roll < 0.6 and isinstance(target, dict) and target:
            del target[rng.choice(list(target))]
        elif roll < 0.7 and isinstance(target, dict):
            target[rng.choice(["extra", "kind", "seq", "\ud800", "x" * 300])] = _fresh(
                rng.choice(odd)
            )
        elif roll < 0.8 and isinstance(target, list) and target:
            if rng.random() < 0.5:
                target.append(_fresh(rng.choice(target)))
            else:
                del target[rng.randrange(len(target))]
        elif roll < 0.9:
            data = _set(data, path, [target] if rng.random() < 0.5 else {"v": target})
        else:
            other = rng.choice(paths)
            source = data
            try:
                for step in other:
                    source = source[step]
                data = _set(data, path, _fresh(source))
            except (KeyError, IndexError, TypeError):
                pass
    return data


def _json_safe(value: Any) -> bool:
    try:
        orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):
        return False
    return True


JSON_ODD = [value for value in ODD if _json_safe(value)]
"""The odd values JSON text can carry."""


def python_data(rng: random.Random, items: list[tuple[type, Any]]) -> tuple[type, Any]:
    """A kind and plain data for ``from_data``: a valid value's data, mutated."""
    kind, value = rng.choice(items)
    return kind, mutate_data(rng, to_data(value))


def json_bytes(rng: random.Random, items: list[tuple[type, Any]]) -> tuple[type, bytes]:
    """A kind and JSON bytes for ``from_json``: mutated as data, then (often) as bytes."""
    kind, value = rng.choice(items)
    raw = to_json(value)
    if rng.random() < 0.6:
        # A mutation JSON cannot carry (a key with a surrogate) keeps the valid text.
        with contextlib.suppress(TypeError, orjson.JSONEncodeError):
            raw = orjson.dumps(mutate_data(rng, to_data(value), JSON_ODD))
    if rng.random() < 0.5:
        raw = _mutate_bytes(rng, raw)
    if rng.random() < 0.1:  # ask for another kind than it is
        kind = rng.choice([Event, SessionState, kind])
    return kind, raw


_SNIPPETS = [
    b'"\\ud800"', b'"\\udcff"', b"\xff", b"\xc3", b"\x00", b"18446744073709551616", b"1e400",
    b"-0", b"NaN", b"[" * 300, b"{}", b"null", b'"kind":"turn_started"', b"9223372036854775808",
    b'"\\u0000"', b"1.0", b"true",
]  # fmt: skip


def _mutate_bytes(rng: random.Random, raw: bytes) -> bytes:
    data = bytearray(raw)
    for _ in range(rng.randint(1, 4)):
        if not data:
            data += rng.choice(_SNIPPETS)
            continue
        roll = rng.random()
        where = rng.randrange(len(data))
        if roll < 0.25:
            data[where] = rng.randrange(256)
        elif roll < 0.45:
            del data[where : where + rng.randint(1, 20)]
        elif roll < 0.75:
            data[where:where] = rng.choice(_SNIPPETS)
        elif roll < 0.9:
            end = min(len(data), where + rng.randint(1, 40))
            data[where:where] = data[where:end]
        else:
            del data[where:]
    return bytes(data)


# -- user input ----------------------------------------------------------------------------------

_FIELDS = ["text", "sender", "command", "chatbot_id", "channel_id", "metadata", "attachments",
           "browser_elements"]  # fmt: skip


def input_fields(rng: random.Random) -> tuple[dict[str, Any], Any]:
    """Fields for a ``UserInput`` (mostly sensible, some odd) and a session id."""
    from runtime import Attachment, BrowserElement

    fields: dict[str, Any] = {"text": rng.choice(["hello", "", " ", "会话 ✓", "x" * 200])}
    for name in rng.sample(_FIELDS, rng.randint(0, 4)):
        roll = rng.random()
        if roll < 0.5:
            fields[name] = _fresh(rng.choice(ODD))
        elif name == "attachments":
            fields[name] = [Attachment(id="a", name="a.csv", size=rng.choice([0, 10, 2**40]))]
        elif name == "browser_elements":
            fields[name] = [BrowserElement(url="https://a.example/", text=rng.choice(["x", "é"]))]
        elif name == "metadata":
            fields[name] = mutate_data(rng, {"discord": {"id": 1, "tags": ["a"]}})
        else:
            fields[name] = rng.choice(["Chii", "cli", "general", "compact", "\ud83d", "a\udcff"])
    session_id = rng.choice(["s", "chat-42", "会话", "", "\x00s", "s\ud800", "a\nb", 7, None,
                             "x" * 257, "x" * 256])  # fmt: skip
    return fields, session_id


# -- events appended to a store ----------------------------------------------------------------------


def events_after(rng: random.Random, base: list[Event]) -> list[Any]:
    """What to append after ``base``: the next valid events, some mutated or replaced by junk."""
    from runtime import from_data, replay

    state = replay(base).head
    following: list[Event] = []
    for _ in range(rng.randint(1, 4)):
        event = scenario.next_event(state, at(state.seq + 1))
        state = apply(state, event)
        following.append(event)
    batch: list[Any] = []
    for event in following:
        roll = rng.random()
        if roll < 0.5:
            batch.append(event)
        elif roll < 0.9:
            data = mutate_data(rng, to_data(event))
            try:
                batch.append(from_data(data, Event))
            except Exception:  # refused by the codec: the codec target covers that
                batch.append(event)
        else:
            batch.append(rng.choice(["junk", None, 7, {"kind": "message_added"}, event]))
    return batch


# -- store damage ----------------------------------------------------------------------------------


def damage(rng: random.Random) -> Any:
    """An SQL edit of a store's rows, as a function of a plain connection."""
    kind = rng.randrange(14)
    seed = rng.random()

    def apply_damage(db: sqlite3.Connection) -> None:
        local = random.Random(seed)
        for name in ("events_no_update", "events_no_delete", "events_gapless"):
            if local.random() < 0.9:
                db.execute(f"DROP TRIGGER IF EXISTS {name}")
        sessions = [row[0] for row in db.execute("SELECT session_id FROM sessions")] or ["s"]
        sid = local.choice(sessions)
        last = db.execute("SELECT max(seq) FROM events WHERE session_id = ?", (sid,)).fetchone()[0]
        seq = local.randint(1, last or 1)
        if kind == 0:  # edit an event's text, keeping or breaking its JSON
            (body,) = db.execute(
                "SELECT body FROM events WHERE session_id = ? AND seq = ?", (sid, seq)
            ).fetchone()
            text = _mutate_text(local, body)
            db.execute(
                "UPDATE events SET body = ? WHERE session_id = ? AND seq = ?", (text, sid, seq)
            )
        elif kind == 1:  # an event replaced by another valid event
            (body,) = db.execute(
                "SELECT body FROM events WHERE session_id = ? AND seq = ?",
                (sid, local.randint(1, last or 1)),
            ).fetchone()
            db.execute(
                "UPDATE events SET body = ? WHERE session_id = ? AND seq = ?", (body, sid, seq)
            )
        elif kind == 2:
            db.execute("DELETE FROM events WHERE session_id = ? AND seq = ?", (sid, seq))
        elif kind == 3:
            db.execute(
                "UPDATE events SET hash = ? WHERE session_id = ? AND seq = ?",
                (local.choice([None, "", "0" * 64, "zz" * 32, 7]), sid, seq),
            )
        elif kind == 4:
            db.execute(
                "UPDATE events SET body = CAST(? AS TEXT) WHERE session_id = ? AND seq = ?",
                (local.randbytes(local.randint(0, 40)), sid, seq),
            )
        elif kind == 5:
            db.execute("DELETE FROM sessions WHERE session_id = ?", (sid,))
        elif kind == 6:
            column = local.choice(
                ["seq", "created_at", "updated_at", "messages", "counts", "active_turn_id",
                 "turn_started_at", "cost", "waits", "row_digest"]
            )  # fmt: skip
            value = local.choice([None, 0, -1, 99, "", "x", "2026-05-27T12:50:00", "{}",
                                  '{"processed": 1}', 2**62, 1.5])  # fmt: skip
            db.execute(f"UPDATE sessions SET {column} = ? WHERE session_id = ?", (value, sid))
        elif kind == 7:
            db.execute(
                "UPDATE snapshot_chunks SET body = ? WHERE session_id = ?",
                (
                    _mutate_text(local, "" if local.random() < 0.1 else '{"fields":[],"rows":[]}'),
                    sid,
                ),
            )
        elif kind == 8:
            rows = db.execute(
                "SELECT rowid, body FROM snapshot_chunks WHERE session_id = ?", (sid,)
            ).fetchall()
            if rows:
                _, body = local.choice(rows)
                if isinstance(body, bytes):  # compressed: mutate the JSON inside, or the bytes
                    text = zlib.decompress(body).decode()
                    body = (
                        zlib.compress(_mutate_text(local, text).encode())
                        if local.random() < 0.7
                        else body[: local.randrange(len(body))]
                    )
                else:
                    body = _mutate_text(local, body)
                db.execute("UPDATE snapshot_chunks SET body = ? WHERE session_id = ?", (body, sid))
        elif kind == 9:
            db.execute(
                "UPDATE snapshots SET " + local.choice(["seq = seq - 1", "seq = seq + 1",
                "record = substr(record, 2)", "digest = NULL", "record = '{}'"])
                + " WHERE session_id = ?",
                (sid,),
            )  # fmt: skip
        elif kind == 10:
            db.execute(
                local.choice(
                    [
                        "DELETE FROM snapshot_chunks WHERE session_id = ?",
                        "DELETE FROM snapshots WHERE session_id = ?",
                        "UPDATE snapshot_chunks SET seq = seq + 1 WHERE session_id = ?",
                        "UPDATE snapshot_chunks SET digest = 'x' WHERE session_id = ?",
                    ]
                ),
                (sid,),
            )
        elif kind == 11:  # two rows swapped, hashes and all
            other = local.randint(1, last or 1)
            rows = db.execute(
                "SELECT seq, kind, body, hash FROM events WHERE session_id = ? AND seq IN (?, ?)",
                (sid, seq, other),
            ).fetchall()
            if len(rows) == 2:
                for (a, _, _, _), (_, k, b, h) in zip(rows, reversed(rows), strict=True):
                    db.execute(
                        "UPDATE events SET kind = ?, body = ?, hash = ? "
                        "WHERE session_id = ? AND seq = ?",
                        (k, b, h, sid, a),
                    )
        elif kind == 12:
            db.execute(
                "UPDATE amber_meta SET value = ? WHERE key = 'schema_version'",
                (local.choice(["1", "3", "x", "", "2"]),),
            )
        else:
            db.execute(
                "UPDATE events SET kind = ? WHERE session_id = ? AND seq = ?",
                (local.choice(["rolled_back", "", "message_added", "\x00"]), sid, seq),
            )

    return apply_damage


def _mutate_text(rng: random.Random, text: str) -> str:
    if not text:
        return rng.choice(["", "{", "null", "[]"])
    roll = rng.random()
    where = rng.randrange(len(text))
    if roll < 0.3:  # one character changed: most often still valid JSON
        replacement = rng.choice('0123456789abcdefxyz "{}[],:')
        return text[:where] + replacement + text[where + 1 :]
    if roll < 0.5:
        return text[:where]
    if roll < 0.7:
        for old, new in (("1", "2"), ("true", "false"), ("delivered", "pending"), ("Chii", "Chie")):
            if old in text:
                return text.replace(old, new, 1)
        return text + " "
    if roll < 0.85:
        return text[:where] + text[where:].replace(",", ", ", 1)
    return text[:where] + '"\\u00e9"' + text[where:]


# -- command lines ---------------------------------------------------------------------------------

_SHAPES: dict[str, list[list[str]]] = {
    "sessions": [[], ["--json"]],
    "timeline": [["S"], ["S", "--from", "SEQ"], ["S", "--to", "SEQ", "--json"],
                 ["S", "--kind", "KIND"], ["S", "--message", "V"]],
    "show": [["S"], ["S", "--at", "SEQ"], ["S", "--at", "SEQ", "--view", "VIEW"],
             ["S", "--message", "V", "--full"], ["S", "--json"]],
    "diff": [["S", "SEQ", "SEQ"], ["S", "SEQ"], ["S", "--", "SEQ", "SEQ", "--json"]],
    "fork": [["S", "--at", "SEQ"], ["S", "--at", "SEQ", "--as", "V", "--json"]],
    "replay": [["S"], ["S", "--verify"], ["--all", "--verify", "--json"]],
    "export": [["S"], ["S", "-o", "OUT"], ["S", "-o", "OUT", "--force"]],
    "import": [["V"], ["V", "--as", "V"]],
    "recover": [[], ["--older-than", "SEQ", "--dry-run"], ["--rebuild", "--dry-run"],
                ["--older-than", "V", "--json"]],
    "events": [[]],
    "check": [[], ["--json"]],
    "inspect": [["S"]],
}  # fmt: skip
_SLOTS = {
    "S": ["s", "x", "s", "x", "", "nope", "\x01s", "s" * 300, "é"],
    "SEQ": ["0", "1", "5", "-1", "-2", "head", "HEAD", "44", "45", "99", "1e400", "9" * 40,
            "nan", "inf", "-0", " 3", "0x10", ""],
    "KIND": ["turn_started", "message_added", "bogus", ""],
    "VIEW": ["state", "history", "clean", "openai", "anthropic", "gemini", "bogus"],
    "V": ["m1", "s", "new", "", "/nonexistent/x.json", "-", "a" * 300, "\x00"],
}  # fmt: skip


def cli_args(rng: random.Random, db: str) -> list[str]:
    """An ``amber`` command line: a real command shape with values drawn from odd ones, and
    now and then an extra stray argument."""
    command = rng.choice(list(_SHAPES))
    args = [command]
    folder = pathlib.Path(db).parent
    # Written files stay in the store's folder (never the working directory).
    outputs = [str(folder / "out.json"), str(folder), str(folder / "missing" / "x.json")]
    for part in rng.choice(_SHAPES[command]):
        if part == "OUT":
            args.append(rng.choice(outputs))
        else:
            args.append(rng.choice(_SLOTS[part]) if part in _SLOTS else part)
    if rng.random() < 0.15:
        args.insert(rng.randint(1, len(args)), rng.choice(["--bogus", "x", "--json", "-h"]))
    # Always --db: without it a command would use (or create) ./amber.db.
    return [*args, "--db", db]
