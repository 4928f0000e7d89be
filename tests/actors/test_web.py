"""``amber web``'s pages and actions, through Starlette's test client.

Every page is read against a store written by a real demo run; every bad
request gets an error page with the right status and the CLI's message;
nothing but a fork writes to the store.
"""

from __future__ import annotations

import contextlib
import html
import json
import re
import sqlite3
from collections.abc import Iterable
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import orjson
import pytest
from cli_support import Recorded, amber, recorded
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from provider_support import FIXTURES, model_for
from web_support import TOKEN, Ids, Page, agent_session, snapshot, web

import actors._web._pages
import actors._web._source
import actors._web._views
from actors import Runtime, Settings
from actors._cli._views import view_data
from actors.providers.testing import StubServer, load_fixture
from runtime import (
    EVENT_TYPES,
    ApprovalDecided,
    ApprovalRequested,
    Attachment,
    Category,
    Event,
    MessageAdded,
    RolledBack,
    SessionState,
    ToolCall,
    TurnEnded,
    TurnOutcome,
    TurnStarted,
    apply,
    new_message,
    replay,
)
from runtime.store import SQLiteStore
from runtime.testing import session_events

__all__ = ["recorded"]


def page(client: object, path: str, status: int = 200) -> Page:
    """GET ``path`` and parse it; the status must be ``status``."""
    response = client.get(path)  # type: ignore[attr-defined]
    assert response.status_code == status, (path, response.status_code, response.text[:2000])
    return Page.of(response.text)


def error(client: object, path: str, status: int) -> str:
    """The error message of the error page ``path`` answers with."""
    return page(client, path, status).text("error")


def linked(shown: Page, path: str, **params: str) -> bool:
    """True if the page links to ``path`` with exactly these query parameters."""
    for link in shown.links:
        parts = urlsplit(link)
        if parts.path == path and dict(parse_qsl(parts.query)) == params:
            return True
    return False


def cli_error(*args: object) -> str:
    """The one-line error ``amber ARGS`` prints, without ``amber: ``."""
    result = amber(*args)  # type: ignore[arg-type]
    assert result.exit_code != 0
    return result.output.strip().removeprefix("amber: ")


class TestSessions:
    def test_lists_every_session_with_its_figures(self, recorded: Recorded) -> None:
        """One row per session: turns, messages, events, tokens, cost (none recorded), state."""
        with web(recorded.db) as (client, _):
            text = page(client, "/").text("sessions")
        demo = recorded.demo.state
        tokens = sum(r.usage.total_tokens for r in demo.model_calls() if r.usage)
        assert re.search(
            rf"demo idle {len(demo.turn_list())} {len(demo)} {recorded.demo.events} "
            rf"{tokens} \(0 / {tokens}\) — \d+ s ago",
            text,
        ), text
        assert "broken idle" in text

    def test_sorts_by_any_column_both_ways(self, recorded: Recorded) -> None:
        """sort=events orders by events; order=asc reverses; unknown columns are a 400."""
        with web(recorded.db) as (client, _):
            down = page(client, "/?sort=events").text("sessions")
            up = page(client, "/?sort=events&order=asc").text("sessions")
            assert down.index("demo") < down.index("broken")
            assert up.index("broken") < up.index("demo")
            assert error(client, "/?sort=colour", 400) == (
                "Cannot sort by 'colour'; pass sort= one of session, events, turns, messages, "
                "tokens, cost, active, state."
            )
            assert error(client, "/?order=up", 400) == "order must be 'asc' or 'desc' (got 'up')."

    def test_a_fork_says_where_it_comes_from(self, recorded: Recorded, tmp_path: Path) -> None:
        """A fork's row links to its source at the fork's seq."""
        db = recorded.copy(tmp_path)
        amber("fork", "demo", "--at", 16, "--as", "retry", "--db", db)
        with web(db) as (client, _):
            sessions = page(client, "/")
        assert "fork of demo @ 16" in sessions.text("sessions")
        assert "/session?s=demo&at=16" in sessions.links

    def test_a_long_fork_of_one_message_is_still_a_fork(
        self, recorded: Recorded, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A fork that inherited one message looks like a session whose first event added
        it: the store's first event tells, read alone however long the session is (it
        was read only for sessions up to 2,000 events)."""
        monkeypatch.setattr(actors._web._source, "_EXACT_FORK_CHECK", 0)
        db = recorded.copy(tmp_path)
        amber("fork", "demo", "--at", 1, "--as", "one", "--db", db)
        with web(db) as (client, _):
            sessions = page(client, "/")
        assert "fork of demo @ 1" in sessions.text("sessions")

    def test_a_forks_messages_show_the_seq_that_added_them_here(
        self, recorded: Recorded, tmp_path: Path
    ) -> None:
        """An inherited message's row shows seq 1 (the fork's branch_imported), not the
        source's seq, in the state's table and on the message's page."""
        db = recorded.copy(tmp_path)
        amber("fork", "demo", "--at", 16, "--as", "retry", "--db", db)
        late = Ids(recorded.demo.state).msg(5)
        assert recorded.demo.state.message(late).event_seq > 1
        with web(db) as (client, _):
            table = page(client, "/session?s=retry&at=-1").text("messages")
            one = page(client, f"/message?s=retry&id={late}&at=-1").text("fields")
        seqs = re.findall(r"[+~]? (\d+) msg_", table)
        assert len(seqs) == 6
        assert set(seqs) == {"1"}
        source_seq = recorded.demo.state.message(late).event_seq
        assert f"event seq1 (inherited with the fork: seq {source_seq} of demo)" in one

    def test_an_empty_store_says_how_to_make_a_session(self, tmp_path: Path) -> None:
        """A store without sessions shows how to store one."""
        db = tmp_path / "empty.db"
        SQLiteStore(db).close()
        with web(db) as (client, _):
            assert "amber demo --db" in page(client, "/").html


class TestSession:
    def test_opens_at_the_head(self, recorded: Recorded) -> None:
        """Without at=, the head: the last rows of the timeline, the last event chosen."""
        last = recorded.demo.events
        with web(recorded.db) as (client, _):
            shown = page(client, "/session?s=demo")
        assert shown.text("title") == f"demo seq {last} of {last}"
        assert shown.attrs[f"seq-{last}"]["class"] == "sel"
        reply = Ids(recorded.demo.state).msg(15)
        assert shown.text("event").startswith(f"Event: {reply} reply: pending → delivered")

    def test_the_interrupt_reads_as_on_the_command_line(self, recorded: Recorded) -> None:
        """The event line and the changes at the interrupt are amber timeline's and diff's."""
        seq = recorded.demo.interrupt_seq
        with web(recorded.db) as (client, _):
            shown = page(client, f"/session?s=demo&at={seq}")
        timeline = amber("timeline", "demo", "--from", seq, "--to", seq, "--db", recorded.db)
        line = timeline.output.splitlines()[1]
        assert line.split("turn_ended", 1)[1].strip() in shown.text("event")
        diff = amber("diff", "demo", seq - 1, seq, "--db", recorded.db).output.splitlines()
        changes = [" ".join(x.split()) for x in diff[2 : diff.index("")]]
        assert shown.text("changes") == " ".join(changes)
        question = Ids(recorded.demo.state).msg(11)
        assert f"~ {question} status: processing → interrupted" in shown.text("changes")
        rows = shown.text("messages")
        added = recorded.demo.state.message(question).event_seq
        assert f"~ {added} {question} user question interrupted" in rows  # marked as changed

    def test_the_empty_state_and_negative_seqs(self, recorded: Recorded) -> None:
        """at=0 is the empty state; at=-2 the state before the head; head the head."""
        last = recorded.demo.events
        with web(recorded.db) as (client, _):
            empty = page(client, "/session?s=demo&at=0")
            assert empty.text("title") == f"demo seq 0 of {last}"
            assert "(no messages yet)" in empty.text("state")
            assert not empty.has("changes")
            assert page(client, "/session?s=demo&at=-2").text("seq") == str(last - 1)
            assert page(client, "/session?s=demo&at=head").text("seq") == str(last)

    def test_views_beside_the_state(self, recorded: Recorded) -> None:
        """Each provider view is the request rebuilt from that state, as amber show prints it."""
        seq = recorded.demo.input_seq
        with SQLiteStore(recorded.db) as store:
            state = store.load_timeline("demo").at(seq)
        with web(recorded.db) as (client, _):
            for view in ("openai", "openai-responses", "anthropic", "gemini"):
                shown = page(client, f"/session?s=demo&at={seq}&view={view}")
                data = json.loads(html.unescape(shown.raw("request")))
                assert data == json.loads(orjson.dumps(view_data(view, state)))
                assert f"Rebuilt from the state at seq {seq}" in shown.text("side")
            clean = page(client, f"/session?s=demo&at={seq}&view=clean").text("side")
            assert "clean_history: " in clean
            assert "No result yet" in clean
            history = page(client, f"/session?s=demo&at={seq}&view=history").text("side")
            assert "session_history: 14 messages, phased" in history
            calls = page(client, f"/session?s=demo&at={seq}").text("side")
            row = recorded.demo.state.model_calls()[4]
            assert f"{row.operation_id} completed {row.started_seq}→{row.ended_seq}" in calls

    def test_filter_by_kind(self, recorded: Recorded) -> None:
        """kind= keeps only those events; the filter shows how many of each kind there are."""
        with web(recorded.db) as (client, _):
            shown = page(client, "/session?s=demo&at=40&kind=turn_ended&kind=turn_started")
            rows = shown.text("rows")
            assert rows.count(" ends ") == 4
            assert rows.count(" starts, claims ") == 4
            assert "+ msg_" not in rows
            assert "model call" not in rows
            assert "turn_ended 4" in shown.text("filter")
            assert error(client, "/session?s=demo&kind=colour", 400).startswith(
                "Unknown event kind 'colour'; pass kind= one of message_added, "
            )

    def test_bad_seqs_read_as_on_the_command_line(self, recorded: Recorded) -> None:
        """A seq out of range is a 404 with amber show's sentence; not a number, a 400."""
        last = recorded.demo.events
        with web(recorded.db) as (client, _):
            assert error(client, "/session?s=demo&at=99", 404) == (
                f"Session 'demo' has no seq 99: it holds seq 0 (before the first event) to "
                f"{last}. Pass at between 0 and {last}, or between {-last - 1} and -1 to count "
                f"back from the head (-1 is the head, {-last - 1} seq 0)."
            )
            shown = cli_error("show", "demo", "--at", "99", "--db", recorded.db)
            assert shown.replace("--at", "at") == error(client, "/session?s=demo&at=99", 404)
            assert error(client, "/session?s=demo&at=-99", 404).startswith(
                "Session 'demo' has no seq -99"
            )
            assert error(client, "/session?s=demo&at=ten", 400) == (
                "'ten' is not a seq: pass a number (0 is the empty state before the first "
                "event), a negative number to count back from the head (-1 is the head), or "
                "'head'."
            )
            minus_zero = error(client, "/session?s=demo&at=-0", 400)
            assert minus_zero == (
                "'-0' is not a seq: 0 is the empty state before the first event and -1 the "
                "head; pass 0, -1 or 'head'."
            )
            assert cli_error("show", "demo", "--at=-0", "--db", recorded.db).endswith(
                f"Invalid value for '--at': {minus_zero}"
            )
            # Blank is not a seq either (as --at ' '); only an empty at= is the head.
            blank = error(client, "/session?s=demo&at=%20", 400)
            assert blank.startswith("' ' is not a seq: pass a number")
            assert cli_error("show", "demo", "--at", " ", "--db", recorded.db).endswith(
                f"Invalid value for '--at': {blank}"
            )
            assert page(client, "/session?s=demo&at=").text("seq") == str(last)
            assert error(client, "/session?s=demo&at=1&at=2", 400) == (
                "'at' is given 2 times ('1', '2'); pass it once."
            )
            assert error(client, "/session?s=demo&msgs=-1", 400) == (
                "'msgs' must be a whole number ≥ 0 (got '-1')."
            )

    def test_unknown_sessions_read_as_on_the_command_line(self, recorded: Recorded) -> None:
        """An unknown session is a 404 with the CLI's did-you-mean; no session at all, a 400."""
        with web(recorded.db) as (client, _):
            message = error(client, "/session?s=dmeo", 404)
            assert message == f"No session 'dmeo' in '{recorded.db}'; did you mean 'demo'?"
            assert message == cli_error("timeline", "dmeo", "--db", recorded.db)
            assert error(client, "/session", 400).startswith("This page needs a session id")
            assert error(client, "/session?s=", 400).startswith("This page needs a session id")

    def test_jumps_to_turns_and_errors(self, recorded: Recorded) -> None:
        """Jumps redirect to the next turn boundary or error; none left leaves a note."""
        with SQLiteStore(recorded.db) as store:
            line = store.load_timeline("demo")
        failed = Ids(recorded.demo.state).msg(9)
        tool_error = next(s for s in range(1, line.last_seq + 1) if line.at(s).get(failed))
        with web(recorded.db) as (client, _):
            moved = client.get("/jump?s=demo&from=3&to=next-error&view=clean")
            assert moved.status_code == 303
            assert moved.headers["location"] == f"/session?s=demo&at={tool_error}&view=clean"
            second = recorded.demo.state.turn_list()[1]
            start, end = second.started_seq, second.ended_seq
            back = client.get(f"/jump?s=demo&from={start + 3}&to=prev-turn")
            assert back.headers["location"] == f"/session?s=demo&at={start}"
            ahead = client.get(f"/jump?s=demo&from={start}&to=next-turn")
            assert ahead.headers["location"] == f"/session?s=demo&at={end}"
            last = recorded.demo.events
            none = client.get(f"/jump?s=demo&from={last}&to=next-turn")
            assert none.headers["location"] == f"/session?s=demo&at={last}&note=no-turn"
            assert "No turn starts or ends that way" in page(client, none.headers["location"]).text(
                "note"
            )
            assert error(client, "/jump?s=demo&from=1&to=sideways", 400).startswith(
                "Unknown jump 'sideways'"
            )


class TestMessageAndCall:
    def test_a_message_in_full(self, recorded: Recorded) -> None:
        """A message page has every field, the whole content and the events that touched it."""
        with web(recorded.db) as (client, _):
            result = Ids(recorded.demo.state).msg(4)
            shown = page(client, f"/message?s=demo&id={result}&at=-1")
        assert "1267650600228229401496703205376" in shown.raw("content")
        assert "run_shell_command" in shown.text("fields")
        assert '"duration_ms"' in shown.raw("metadata")
        listed = amber("timeline", "demo", "--message", result, "--db", recorded.db).output
        seqs = [line.split()[0] for line in listed.splitlines()[1:]]
        assert re.findall(r"seq (\d+)", shown.text("touched")) == seqs
        assert len(seqs) == 2  # added, then delivered

    def test_a_message_before_it_exists(self, recorded: Recorded) -> None:
        """Asking for a message at a seq before it was added says where it is added."""
        with web(recorded.db) as (client, _):
            late = Ids(recorded.demo.state).msg(14)
            added = recorded.demo.state.message(late).event_seq
            message = error(client, f"/message?s=demo&id={late}&at=10", 404)
            assert message == (
                f"Session 'demo' has no message '{late}' at seq 10; it is added at seq {added}; "
                f"pass at={added} or later."
            )
            assert error(client, "/message?s=demo&id=nope", 404).endswith(
                "the session page lists its messages."
            )

    def test_a_model_call_that_sent_an_image(self, tmp_path: Path) -> None:
        """The image's bytes are in the application's artifact store, not here: the page shows
        the request with a placeholder for them and says how to rebuild it exactly (it was a
        500 error)."""

        class Artifacts:
            def read(self, attachment: Attachment) -> bytes:
                return b"\x89PNG\r\n"

        db = tmp_path / "amber.db"
        image = Attachment(id="art_1", name="cat.png", kind="image", media_type="image/png")
        with StubServer() as server:
            server.queue(*load_fixture(FIXTURES / "anthropic" / "text.json")["replies"])
            settings = Settings(passivate_after=None, artifacts=Artifacts())
            with Runtime(model=model_for("anthropic", server), store=db, settings=settings) as rt:
                rt.send("s", "What is this?", attachments=[image])
                rt.wait_idle("s", timeout=10)
        with web(db) as (client, _):
            shown = page(client, "/call?s=s&id=1")
        assert "its digest is not checked" in shown.text("exact")
        assert "rebuild_request(" in shown.text("exact")
        request = json.loads(html.unescape(shown.raw("request")))
        block = request["messages"][0]["content"][1]
        assert block["source"]["data"].startswith("<image cat.png (image/png, artifact art_1)")

    def test_a_model_call_with_its_rebuilt_request(self, recorded: Recorded) -> None:
        """A call shows what it answered and the request rebuilt just before it started."""
        with SQLiteStore(recorded.db) as store:
            line = store.load_timeline("demo")
        ids = Ids(recorded.demo.state)
        row = next(r for r in line.head.model_calls() if r.operation_id == ids.call(5))
        with web(recorded.db) as (client, _):
            shown = page(client, f"/call?s=demo&id={ids.call(5)}&provider=anthropic")
            assert "write_report" in shown.text("response")
            assert "rebuilt from the state at seq" in shown.text("rebuilt")
            request = json.loads(html.unescape(shown.raw("request")))
            expected = view_data("anthropic", line.at(row.started_seq - 1))
            assert request == json.loads(orjson.dumps(expected))
            assert error(client, "/call?s=demo&id=run_9", 404) == (
                f"Session 'demo' has no model call 'run_9'; it has 6 (#1 {ids.call(1)} … #6 "
                f"{ids.call(6)}); pass id= its number, source key or operation id (the session "
                "page lists them)."
            )
            # Its number, as amber show --call takes it (1, #1): the same page.
            fifth = page(client, f"/call?s=demo&id={ids.call(5)}").raw("request")
            assert page(client, "/call?s=demo&id=5").raw("request") == fifth
            assert page(client, "/call?s=demo&id=%235").raw("request") == fifth
            assert error(client, "/call?s=demo&id=7", 404).startswith(
                "Session 'demo' has no model call '7'; it has 6 (#1"
            )
            assert error(client, f"/call?s=demo&id={ids.call(5)}&provider=x", 400).startswith(
                "Unknown provider 'x'"
            )


class TestChartsVerifyExport:
    def test_charts_have_a_bar_per_turn(self, recorded: Recorded) -> None:
        """Latency and tokens have one linked bar per turn; cost says none is recorded."""
        turns = len(recorded.demo.state.turn_list())
        with web(recorded.db) as (client, _):
            shown = page(client, "/charts?s=demo")
        latency = shown.html.split('id="chart-latency"')[1].split('id="chart-tokens"')[0]
        assert latency.count('<a href="/session?s=demo&amp;at=') == turns
        assert "No cost recorded in this session" in shown.text("chart-cost")
        assert shown.html.count("<polygon") >= 3  # delivered, processed, interrupted …
        table = shown.text("turns")
        assert all(turn.id in table for turn in recorded.demo.state.turn_list())
        assert table.count(" processed ") + table.count(" interrupted ") == turns

    def test_verify_replays_and_reports_each_check(self, recorded: Recorded) -> None:
        """Verify runs amber replay --verify's checks."""
        with web(recorded.db) as (client, _):
            shown = page(client, "/verify?s=demo")
        assert shown.text("verdict").startswith("Verified")
        assert "✓ snapshot" in shown.text("checks")
        assert "✓ summary" in shown.text("checks")

    def test_verify_reports_a_divergence(self, recorded: Recorded, tmp_path: Path) -> None:
        """A summary row that does not match the log fails the check, as on the command line."""
        db = recorded.copy(tmp_path)
        with contextlib.closing(sqlite3.connect(db)) as raw, raw:
            raw.execute("UPDATE sessions SET messages = 99 WHERE session_id = 'demo'")
        with web(db) as (client, _):
            shown = page(client, "/verify?s=demo")
        assert shown.text("verdict").startswith("Diverged")
        assert "✗ summary" in shown.text("checks")
        assert amber("replay", "demo", "--verify", "--db", db).exit_code == 1

    def test_export_is_amber_export(self, recorded: Recorded) -> None:
        """The download is byte for byte what amber export prints."""
        with web(recorded.db) as (client, _):
            response = client.get("/export?s=demo")
        assert response.status_code == 200
        assert response.headers["content-disposition"] == 'attachment; filename="demo.json"'
        assert response.text == amber("export", "demo", "--db", recorded.db).output


class TestFork:
    def test_fork_stores_and_opens_the_new_session(
        self, recorded: Recorded, tmp_path: Path
    ) -> None:
        """POST /fork stores a fork as amber fork does and redirects to it."""
        db = recorded.copy(tmp_path)
        seq = recorded.demo.input_seq
        with web(db) as (client, _):
            posted = client.post(
                "/fork", data={"s": "demo", "at": str(seq), "as": "", "token": TOKEN}
            )
            assert posted.status_code == 303
            assert posted.headers["location"] == f"/session?s=demo-fork-{seq}&note=forked"
            shown = page(client, posted.headers["location"])
        assert f"forked from demo at seq {seq}" in shown.html
        turn = Ids(recorded.demo.state).turn(3)
        assert f"It was taken mid-turn: {turn} is still active" in shown.text("note")
        with SQLiteStore(db) as store:
            assert store.load_state(f"demo-fork-{seq}").active_turn_id == turn

    def test_a_fork_waiting_for_approval_says_resume_not_recover(self, tmp_path: Path) -> None:
        """A fork taken while a call waits for approval waits for it too: the note says so
        and how to answer it, not that amber recover gives its input back (it is no orphan;
        before the fix it pointed at amber recover, which then cancelled the approval)."""
        from actors import Runtime, ScriptedModel, Settings, call, tool

        @tool(approval=True)
        def pay(to: str) -> str:
            """Pay.

            Args:
                to: Whom.
            """
            return "paid"

        db = tmp_path / "a.db"
        with Runtime(model=ScriptedModel([call("pay", {"to": "Ana"})]), store=db, tools=[pay],
                     settings=Settings(passivate_after=None)) as rt:  # fmt: skip
            rt.send("w", "pay Ana", sender="Chii")
            rt.wait_idle("w", timeout=60)
            seq = rt.state("w").seq
        with web(db) as (client, _):
            posted = client.post("/fork", data={"s": "w", "at": str(seq), "as": "", "token": TOKEN})
            shown = page(client, posted.headers["location"])
        note = shown.text("note")
        assert "waited for approval of 1 tool call(s)" in note
        assert f"amber resume w-fork-{seq} --db {db}" in note
        assert "amber recover" not in note

    def test_fork_conflicts_and_bad_seqs_write_nothing(
        self, recorded: Recorded, tmp_path: Path
    ) -> None:
        """A taken id is a 409, a bad seq a 404/400, each with the CLI's message; nothing is stored."""
        db = recorded.copy(tmp_path)
        before = snapshot(db)
        with web(db) as (client, _):

            def fork(status: int, **fields: str) -> str:
                response = client.post("/fork", data={"s": "demo", "token": TOKEN, **fields})
                assert response.status_code == status, response.text
                return Page.of(response.text).text("error")

            taken = fork(409, at="5", **{"as": "broken"})
            assert taken == cli_error("fork", "demo", "--at", "5", "--as", "broken", "--db", db)
            assert fork(404, at="99").startswith("Session 'demo' has no seq 99")
            assert fork(400, at="x").startswith("'x' is not a seq")
            assert fork(400, at="") == "The fork form needs a seq (at): the seq to fork from."
            assert fork(404, at="3", s="nope").startswith("No session 'nope'")
            assert fork(400, at="-0") == (
                "'-0' is not a seq: 0 is the empty state before the first event and -1 the "
                "head; pass 0, -1 or 'head'."
            )
            bad_name = fork(400, at="3", **{"as": "bad\nid"})
            assert bad_name == (
                "Session id 'bad\\nid' cannot be used: it holds the control character '\\n' at "
                "index 3. A session id is 1 to 256 characters of valid Unicode without control "
                "characters, not only white space (like 'chat-42')."
            )
            shown = cli_error("fork", "demo", "--at", "3", "--as", "bad\nid", "--db", db)
            assert shown.endswith(f"Invalid value for '--as': {bad_name}")
        assert snapshot(db) == before

    @pytest.mark.parametrize(
        ("body", "headers", "status", "message"),
        [
            ("s=demo&at=3", {}, 403, "The form's token is missing or stale"),
            ("s=demo&at=3&token=wrong", {}, 403, "The form's token is missing or stale"),
            (
                f"s=demo&at=3&token={TOKEN}",
                {"origin": "http://evil.example"},
                403,
                "This form can only be sent from the viewer's own pages (not from",
            ),
            (
                f"s=demo&at=3&token={TOKEN}",
                {"sec-fetch-site": "cross-site"},
                403,
                "This form can only be sent from the viewer's own pages.",
            ),
            (f"s=demo&at=3&token={TOKEN}&colour=red", {}, 400, "Unexpected form field 'colour'"),
            (f"s=demo&at=3&at=4&token={TOKEN}", {}, 400, "'at' is given 2 times"),
            (b"s=demo&at=\xff\xfe", {}, 400, "The form is not UTF-8 text"),
            ("s=demo&&at", {}, 400, "The form cannot be read"),
            ("x" * 9_000, {}, 413, "The form is over 8,192 bytes"),
            (
                f"s=demo&at=3&token={TOKEN}",
                {"content-type": "application/json"},
                415,
                "Expected a form (application/x-www-form-urlencoded), got application/json",
            ),
        ],
    )
    def test_malformed_or_foreign_forms_are_refused(
        self,
        recorded: Recorded,
        tmp_path: Path,
        body: str | bytes,
        headers: dict[str, str],
        status: int,
        message: str,
    ) -> None:
        """Forms with no token, from another site, or that do not parse: refused, nothing written."""
        db = recorded.copy(tmp_path)
        before = snapshot(db)
        sent = {"content-type": "application/x-www-form-urlencoded", **headers}
        with web(db) as (client, _):
            response = client.post("/fork", content=body, headers=sent)
        assert response.status_code == status, response.text
        assert Page.of(response.text).text("error").startswith(message)
        assert snapshot(db) == before

    def test_fork_only_by_post(self, recorded: Recorded) -> None:
        """GET /fork is a 405; POST on a page is a 405."""
        with web(recorded.db) as (client, _):
            assert error(client, "/fork?s=demo&at=3", 405) == "GET is not allowed on '/fork'."
            assert client.post("/session?s=demo").status_code == 405

    def test_names_are_checked_as_fork_as_checks_them(
        self, recorded: Recorded, tmp_path: Path
    ) -> None:
        """The form's name is ``amber fork --as``'s: kept as typed (spaces included), refused
        with the CLI's sentence when it cannot be an id (a newline, only white space); an
        empty or absent name is the default id, which the form suggests free."""
        db = recorded.copy(tmp_path)
        with web(db) as (client, _):

            def fork(status: int, **fields: str) -> str:
                response = client.post(
                    "/fork", data={"s": "demo", "at": "5", "token": TOKEN, **fields}
                )
                assert response.status_code == status, response.text
                if status == 303:
                    return response.headers["location"]
                return Page.of(response.text).text("error")

            for name in ("\n", "   "):
                refused = fork(400, **{"as": name})
                shown = cli_error("fork", "demo", "--at", "5", "--as", name, "--db", db)
                assert " ".join(shown.split()).endswith(f"Invalid value for '--as': {refused}")
            assert fork(303, **{"as": " sp "}) == "/session?s=+sp+&note=forked"
            assert fork(303, **{"as": ""}) == "/session?s=demo-fork-5&note=forked"
            assert fork(303) == "/session?s=demo-fork-5-2&note=forked"
            shown = client.get("/session?s=demo&at=5").text
            assert 'placeholder="demo-fork-5-3"' in shown
            assert 'placeholder="demo-fork-6"' in client.get("/session?s=demo&at=6").text
        with SQLiteStore(db) as store:
            assert " sp " in store
            assert "sp" not in store

    def test_a_name_taken_between_the_check_and_the_write(
        self, recorded: Recorded, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Simultaneous forks to one id: the loser is the 409 of a taken id (not a 500 for
        SeqConflict); without a name, the fork takes the next free -N."""
        db = recorded.copy(tmp_path)
        real = SQLiteStore.append
        taken: list[str] = []

        def racing(self: SQLiteStore, events: Iterable[Event]) -> dict[str, SessionState]:
            batch = list(events)
            if batch[0].session_id not in taken and len(taken) < 2:
                taken.append(batch[0].session_id)
                real(self, batch)  # another writer's fork, stored first under that id
            return real(self, batch)

        monkeypatch.setattr(SQLiteStore, "append", racing)
        with web(db) as (client, _):
            named = client.post(
                "/fork", data={"s": "demo", "at": "5", "as": "racef", "token": TOKEN}
            )
            assert named.status_code == 409, named.text
            assert Page.of(named.text).text("error") == (
                f"The store '{db}' already has a session 'racef'; pass another --as, or leave "
                "--as out to get a free id."
            )
            default = client.post("/fork", data={"s": "demo", "at": "5", "token": TOKEN})
            assert default.status_code == 303, default.text
            assert default.headers["location"] == "/session?s=demo-fork-5-2&note=forked"
        assert taken == ["racef", "demo-fork-5"]


def _damage(db: Path, sql: str) -> Path:
    """``db`` with rows changed behind the store's back (as the trial's repro does)."""
    with contextlib.closing(sqlite3.connect(db)) as raw, raw:
        raw.execute("DROP TRIGGER IF EXISTS events_no_update")
        raw.execute(sql)
    return db


class TestDamagedSessions:
    """One damaged session does not take the viewer down: the others read as before."""

    @pytest.mark.parametrize("whole", [True, False], ids=["whole", "span"])
    def test_a_damaged_log_is_listed_with_its_error(
        self, recorded: Recorded, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, whole: bool
    ) -> None:
        """The index lists the sound sessions and names the damaged one with its error;
        its pages are a 422 with the store's message and what to run; the states before the
        damage read as ``amber show --at`` reads them (a session loaded whole, or by span)."""
        if not whole:
            monkeypatch.setattr(actors._web._source, "_WHOLE", 0)
            monkeypatch.setattr(actors._web._source, "_BACKGROUND", 0)
        db = _damage(
            recorded.copy(tmp_path),
            "UPDATE events SET body=replace(body,'Tokyo','Kyoto') "
            "WHERE session_id='demo' AND seq=21",
        )
        with web(db) as (client, _):
            index = page(client, "/")
            assert index.has("sessions")
            assert "broken" in index.text("sessions")
            damaged = index.text("damaged")
            assert damaged.startswith("demo: damaged, CorruptRow: Session 'demo' event seq 21 ")
            assert f"amber check --db {db}" in damaged
            message = error(client, "/session?s=demo", 422)
            assert message.startswith("CorruptRow: Session 'demo' event seq 21 fails its checksum")
            assert f"'amber check --db {db}' lists every damaged row" in message
            # The log itself is damaged: what amber check says of it, not recover --rebuild
            # (which writes derived rows again and cannot mend an event); and a link to the
            # states before the damage.
            assert "recover --rebuild" not in message
            assert message.endswith(
                "The log itself is damaged: restore the file from a backup; the states before "
                "seq 21 still open."
            )
            failed = page(client, "/session?s=demo", 422)
            assert failed.attrs["last-good"]["href"] == "/session?s=demo&at=20"
            assert page(client, "/session?s=demo&at=20").text("seq") == "20"
            assert error(client, "/session?s=demo&at=21", 422) == message
            assert error(client, "/session?s=demo&at=-40", 422) == message
            assert error(client, "/charts?s=demo", 422) == message
            early = page(client, "/session?s=demo&at=5")
            assert early.attrs["seq-5"]["class"] == "sel"
            assert early.has("seq-20")
            assert not early.has("seq-21")
            assert early.text("damage").startswith("The log is damaged after seq 20")
            assert amber("show", "demo", "--at", "5", "--db", db).exit_code == 0
            assert not page(client, "/session?s=broken").has("damage")

    def test_the_commands_it_prints_run_as_printed(
        self, recorded: Recorded, tmp_path: Path
    ) -> None:
        """The commands on the index, the error page and the verify page named the store
        unquoted (and verify not at all): pasted, a path with a space or `$` named another
        file, and `amber replay` read ./amber.db."""
        import shlex

        db = _damage(
            recorded.copy(tmp_path).rename(tmp_path / "my $store.db"),
            "UPDATE events SET body=replace(body,'Tokyo','Kyoto') "
            "WHERE session_id='demo' AND seq=21",
        )
        _damage(db, "UPDATE sessions SET messages = 99 WHERE session_id = 'broken'")
        quoted = shlex.quote(str(db))
        with web(db) as (client, _):
            damaged = page(client, "/").text("damaged")
            message = error(client, "/session?s=demo", 422)
            verdict = page(client, "/verify?s=broken").text("verdict")
            summary = error(client, "/session?s=broken", 422)
        assert f"amber check --db {quoted} lists" in damaged
        assert f"amber recover --rebuild --db {quoted} writes" in damaged
        assert f'"amber check --db {quoted}" lists' in message
        assert "recover --rebuild" not in message  # the log itself: rebuilding cannot mend it
        assert verdict.startswith("Diverged")
        assert f"amber replay broken --verify --db {quoted} exits 1" in verdict
        assert "'amber recover --rebuild'" not in summary  # the store's own hint, named too
        assert f'"amber recover --rebuild --db {quoted}"' in summary

    def test_a_path_with_two_spaces_is_printed_as_it_is(
        self, recorded: Recorded, tmp_path: Path
    ) -> None:
        """The error page collapsed every run of spaces in its message, so the store
        'my  store.db' was named 'my store.db', and the command it printed named another
        file. The message keeps its spaces, and the page shows them (pre-wrap)."""
        import shlex

        db = _damage(
            recorded.copy(tmp_path).rename(tmp_path / "my  store.db"),
            "UPDATE events SET body=replace(body,'Tokyo','Kyoto') "
            "WHERE session_id='demo' AND seq=21",
        )
        with web(db) as (client, _):
            shown = page(client, "/session?s=demo", 422)
            css = client.get("/static/amber.css").text  # type: ignore[attr-defined]
        message = shown.raw("error")
        assert f'"amber check --db {shlex.quote(str(db))}" lists' in message
        assert "\n" not in message  # one line: the message's line breaks are spaces
        assert re.search(r"#error\b[^{]*\{[^}]*white-space: pre-wrap", css)

    def test_a_damaged_summary_row_is_listed_and_the_viewer_starts(
        self, recorded: Recorded, tmp_path: Path
    ) -> None:
        """A summary row that fails its digest: the store opens, the others are listed."""
        db = _damage(
            recorded.copy(tmp_path), "UPDATE sessions SET messages=99 WHERE session_id='broken'"
        )
        with web(db) as (client, source):
            assert source.check() == 2
            index = page(client, "/")
            assert "demo" in index.text("sessions")
            assert index.text("damaged").startswith(
                "broken: damaged, CorruptRow: Session 'broken' seq "
            )
            summary = page(client, "/session?s=broken", 422)
            assert "amber recover --rebuild" in summary.text("error")
            assert not summary.has("last-good")  # a summary row: no state opens before it

    def test_a_log_cut_short_links_no_state(self, recorded: Recorded, tmp_path: Path) -> None:
        """A log whose last event is gone under an intact summary opens no state (as on the
        command line): the page says to restore a backup, with no link that fails again."""
        db = recorded.copy(tmp_path)
        with contextlib.closing(sqlite3.connect(db)) as raw, raw:
            raw.execute("DROP TRIGGER IF EXISTS events_no_delete")
            raw.execute(
                "DELETE FROM events WHERE session_id='demo' AND seq=(SELECT max(seq) FROM "
                "events WHERE session_id='demo')"
            )
        last = recorded.demo.events
        with web(db) as (client, _):
            failed = page(client, "/session?s=demo", 422)
            assert not failed.has("last-good")
            assert failed.text("error").endswith(
                "The log itself is damaged: restore the file from a backup."
            )
            assert "recover --rebuild" not in failed.text("error")
            error(client, f"/session?s=demo&at={last - 1}", 422)


class TestGuardsAndReads:
    def test_every_page_reads_and_writes_nothing(self, recorded: Recorded, tmp_path: Path) -> None:
        """Every GET page leaves the store's sessions and logs as they were."""
        db = recorded.copy(tmp_path)
        before = snapshot(db)
        ids = Ids(recorded.demo.state)
        with web(db) as (client, _):
            for path in (
                "/",
                "/session?s=demo&at=12&view=anthropic",
                f"/message?s=demo&id={ids.msg(1)}",
                f"/call?s=demo&id={ids.call(1)}",
                "/charts?s=demo",
                "/verify?s=demo",
                "/export?s=demo",
                "/jump?s=demo&from=1&to=next-error",
            ):
                assert client.get(path).status_code in (200, 303), path
        assert snapshot(db) == before

    def test_a_missing_store_is_not_created(self, tmp_path: Path) -> None:
        """A viewer of a path with no store answers 404 and creates no file."""
        db = tmp_path / "typo.db"
        with web(db) as (client, _):
            message = error(client, "/", 404)
        assert message.startswith(f"No Amber store at '{db}': the file does not exist.")
        assert not db.exists()

    def test_a_file_that_is_not_a_store(self, tmp_path: Path) -> None:
        """Another SQLite database is refused with the CLI's NotAStore message, untouched."""
        db = tmp_path / "app.db"
        with contextlib.closing(sqlite3.connect(db)) as raw, raw:
            raw.execute("CREATE TABLE users (id INTEGER)")
        data = db.read_bytes()
        with web(db) as (client, _):
            message = error(client, "/", 500)
        assert message.startswith("NotAStore: ")
        assert db.read_bytes() == data

    def test_other_hosts_are_refused(self, recorded: Recorded) -> None:
        """A request naming a host the viewer does not serve (DNS rebinding) is a 400."""
        with web(recorded.db) as (client, _):
            response = client.get("/", headers={"host": "evil.example"})
        assert response.status_code == 400

    def test_security_headers_and_local_assets(self, recorded: Recorded) -> None:
        """Pages forbid framing and foreign content; the CSS, script and icon are served here."""
        with web(recorded.db) as (client, _):
            response = client.get("/")
            assert "default-src 'self'" in response.headers["content-security-policy"]
            assert response.headers["x-frame-options"] == "DENY"
            assert (
                "http"
                not in re.sub(r'href="/[^"]*"|src="/[^"]*"', "", response.text).split("<body>")[0]
            )
            assert response.headers["cache-control"] == "no-store"
            for asset in ("/static/amber.css", "/static/amber.js", "/static/amber.svg"):
                served = client.get(asset)
                assert served.status_code == 200
                assert served.headers["cache-control"] == "no-cache"
                assert "etag" in served.headers
            assert (
                error(client, "/nowhere", 404)
                == "No page at '/nowhere'; the sessions list is at /."
            )


@pytest.fixture(scope="module")
def long_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 560-event session, its last snapshot at seq 500 and 60 events after it."""

    db = tmp_path_factory.mktemp("long") / "long.db"
    events = agent_session(600, "long")
    with SQLiteStore(db) as store:
        store.append(events[:500])  # a snapshot at 500
        store.append(events[500:560])
        assert store.session("long").snapshot_seq == 500
    return db


def count_spans(monkeypatch: pytest.MonkeyPatch) -> list[tuple[object, ...]]:
    """The arguments of every ``SQLiteStore.load_span`` call from now on."""
    spans: list[tuple[object, ...]] = []
    load_span = SQLiteStore.load_span

    def counted(self: SQLiteStore, *args: object, **kwargs: object) -> object:
        spans.append(args)
        return load_span(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(SQLiteStore, "load_span", counted)
    return spans


class TestLongSessions:
    def test_a_page_reads_only_the_states_it_shows(
        self, long_db: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A session page of a long session reads its span from the nearest stored state
        (as ``amber show``), never the whole log, and nothing loads behind it."""
        monkeypatch.setattr(actors._web._source, "_WHOLE", 100)
        monkeypatch.setattr(actors._web._source, "_BACKGROUND", 100)

        def whole(*args: object, **kwargs: object) -> None:
            raise AssertionError("the whole log was read")

        monkeypatch.setattr(SQLiteStore, "load_timeline", whole)
        with web(long_db) as (client, source):
            head = page(client, "/session?s=long")
            assert not head.has("loading")
            assert head.attrs["seq-560"]["class"] == "sel"
            assert head.has("seq-520")
            assert not head.has("seq-519")
            assert "560 events" in head.text("timeline")
            older = page(client, "/session?s=long&at=42")
            assert older.attrs["seq-42"]["class"] == "sel"
            assert linked(older, "/session", s="long", at="42", **{"from": "63"})
            assert not source._entries  # nothing cached, nothing loading

    def test_moving_between_seqs_reads_the_events_after_the_last_span(
        self, long_db: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The next seqs are the last span and a few events: read once, brought on; each
        page as a fresh viewer shows it."""
        monkeypatch.setattr(actors._web._source, "_WHOLE", 100)
        monkeypatch.setattr(actors._web._source, "_BACKGROUND", 100)
        spans = count_spans(monkeypatch)
        paths = [f"/session?s=long&at={at}" for at in (300, 301, 302, 299, 330, 420)]
        with web(long_db) as (client, _):
            moved = [page(client, path).texts for path in paths]
        assert len(spans) == 1
        for path, texts in zip(paths, moved, strict=True):
            with web(long_db) as (client, _):
                assert page(client, path).texts == texts

    def test_a_mid_sized_session_loads_whole_behind_its_first_span(
        self, long_db: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Up to ``_BACKGROUND`` events, the first page is a span and the whole log is
        replayed once it is sent: the next pages read no span."""
        monkeypatch.setattr(actors._web._source, "_WHOLE", 100)
        spans = count_spans(monkeypatch)
        with web(long_db) as (client, source):
            first = page(client, "/session?s=long")
            assert len(spans) == 1
            assert source.wait_loaded(timeout=60)
            assert page(client, "/session?s=long&at=42").attrs["seq-42"]["class"] == "sel"
            again = page(client, "/session?s=long")
            assert "message_added 186" in again.text("filter")  # counted, now that all is read
            kept = set(first.texts) - {"timeline", "filter"}
            assert {k: again.texts[k] for k in kept} == {k: first.texts[k] for k in kept}
        assert len(spans) == 1

    @pytest.mark.parametrize(
        "query",
        [
            "",
            "&at=0",
            "&at=1",
            "&at=42",
            "&at=499",
            "&at=500",
            "&at=-3",
            "&at=300&from=100",
            "&at=300&from=540",
            "&at=520&from=1",
            "&at=300&msgs=40",
            "&at=555&view=history",
            "&at=120&view=clean&all=1",
            "&at=510&view=anthropic",
        ],
    )
    def test_a_span_reads_as_the_whole_log(
        self, long_db: Path, monkeypatch: pytest.MonkeyPatch, query: str
    ) -> None:
        """A page read from a span is the page read from the whole log (but for the
        filter's counts of each kind, which need every event)."""
        path = f"/session?s=long{query}"
        with web(long_db) as (client, _):
            want = page(client, path)
        monkeypatch.setattr(actors._web._source, "_WHOLE", 100)
        monkeypatch.setattr(actors._web._source, "_BACKGROUND", 100)
        monkeypatch.setattr(actors._web._pages, "_NEAR", 10)  # from= far off: two spans
        with web(long_db) as (client, _):
            got = page(client, path)
        assert got.links == want.links
        assert got.attrs == want.attrs
        kept = set(want.texts) - {"timeline", "filter"}
        assert {k: got.texts[k] for k in kept} == {k: want.texts[k] for k in kept}

    def test_pages_of_rows_and_messages(self, long_db: Path) -> None:
        """from= pages the timeline, msgs= the messages; each page has links to the next."""
        with web(long_db) as (client, _):
            rows = page(client, "/session?s=long&at=300&from=100")
            assert rows.has("seq-100")
            assert rows.has("seq-140")
            assert not rows.has("seq-141")
            assert linked(rows, "/session", s="long", at="300", **{"from": "141"})
            messages = page(client, "/session?s=long&at=300&msgs=40")
            assert "41\u201380 of 100" in messages.text("state")
            assert linked(messages, "/session", s="long", at="300", msgs="0")
            assert linked(messages, "/session", s="long", at="300", msgs="80")


class TestKindFilter:
    """The kind filter of a long session reads the seqs it shows from the kind column
    around the page's seq, and only the states around them."""

    @settings(max_examples=300, deadline=None)
    @given(
        seqs=st.lists(st.integers(1, 300), unique=True).map(sorted),
        pivot=st.integers(0, 310),
        centred=st.booleans(),
    )
    def test_a_page_from_the_seqs_around_it_is_the_page_from_every_seq(
        self, seqs: list[int], pivot: int, centred: bool
    ) -> None:
        """``paged`` (the last ``2 * ROWS`` matches before the pivot, the first ``ROWS + 1``
        from it) picks the rows and pager links ``page_of`` picks from every match."""
        rows = actors._web._pages.ROWS
        before = [s for s in seqs if s < pivot][-2 * rows :]
        after = [s for s in seqs if s >= pivot][: rows + 1]
        assert actors._web._pages.paged(before, after, centred=centred) == (
            actors._web._pages.page_of(seqs, pivot, centred=centred)
        )

    @pytest.mark.parametrize(
        "query",
        [
            "&kind=turn_ended",
            "&at=300&kind=turn_ended",
            "&at=0&kind=turn_started",
            "&at=1&kind=message_added",
            "&at=-3&kind=status_changed&kind=turn_started",
            "&at=300&kind=turn_ended&from=1",
            "&at=300&kind=message_added&from=200",
            "&at=300&kind=message_added&from=559",
            "&at=300&kind=model_call_finished",
            "&at=300&kind=rolled_back",
            "&at=520&kind=turn_ended&view=history",
        ],
    )
    def test_a_filtered_page_reads_as_the_whole_log(
        self, long_db: Path, monkeypatch: pytest.MonkeyPatch, query: str
    ) -> None:
        """The same page, counts of each kind included, as from the whole log, without
        reading it: spans of the rows it shows."""
        path = f"/session?s=long{query}"
        with web(long_db) as (client, _):
            want = page(client, path)
        monkeypatch.setattr(actors._web._source, "_WHOLE", 100)
        monkeypatch.setattr(actors._web._source, "_BACKGROUND", 100)

        def whole(*args: object, **kwargs: object) -> None:
            raise AssertionError("the whole log was read")

        monkeypatch.setattr(SQLiteStore, "load_timeline", whole)
        spans = count_spans(monkeypatch)
        with web(long_db) as (client, _):
            got = page(client, path)
        assert got.texts == want.texts
        assert got.links == want.links
        assert got.attrs == want.attrs
        assert spans  # the rows' states, read by spans
        assert all(args[0] == "long" for args in spans)

    def test_the_counts_follow_a_live_session(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The count of each kind is read once, then only for the events stored since: the
        page after an append is a fresh viewer's."""
        monkeypatch.setattr(actors._web._source, "_WHOLE", 100)
        monkeypatch.setattr(actors._web._source, "_BACKGROUND", 100)
        counted: list[tuple[object, ...]] = []
        kind_counts = SQLiteStore.kind_counts

        def counting(self: SQLiteStore, *args: object) -> dict[str, int]:
            counted.append(args)
            return kind_counts(self, *args)  # type: ignore[arg-type]

        monkeypatch.setattr(SQLiteStore, "kind_counts", counting)
        db = tmp_path / "live.db"
        events = agent_session(600, "live")
        path = "/session?s=live&kind=turn_ended&kind=message_added"
        with SQLiteStore(db) as store:
            store.append(events[:400])
        with web(db) as (client, _):
            page(client, path)
            with SQLiteStore(db) as store:
                store.append(events[400:])
            got = page(client, path)
        assert counted == [("live", 1, 400), ("live", 401, len(events))]
        with web(db) as (client, _):
            assert page(client, path).texts == got.texts

    @settings(
        max_examples=15,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(
        log=session_events(max_steps=60),
        kinds=st.lists(st.sampled_from(sorted(EVENT_TYPES)), min_size=1, max_size=3),
        at=st.integers(0, 10**6),
        start=st.none() | st.integers(0, 10**6),
    )
    def test_random_sessions_filter_as_from_the_whole_log(
        self,
        tmp_path_factory: pytest.TempPathFactory,
        monkeypatch: pytest.MonkeyPatch,
        log: list[Event],
        kinds: list[str],
        at: int,
        start: int | None,
    ) -> None:
        """For random sessions, kinds, seqs and ``from=`` (pages of 5 rows): the paged
        filter shows the rows, links and counts of the filter over every event."""
        db = tmp_path_factory.mktemp("kinds") / "k.db"
        with SQLiteStore(db, snapshot_every=7) as store:
            store.append(log)
        query = f"/session?s=s&at={at % (len(log) + 1)}" + "".join(f"&kind={k}" for k in kinds)
        if start is not None:
            query += f"&from={start % (len(log) + 2)}"
        with monkeypatch.context() as patch:
            patch.setattr(actors._web._pages, "ROWS", 5)
            patch.setattr(actors._web._views, "ROWS", 5)
            with web(db) as (client, _):
                want = page(client, query)
            patch.setattr(actors._web._source, "_WHOLE", 0)
            patch.setattr(actors._web._source, "_BACKGROUND", 0)
            patch.setattr(actors._web._source, "_GAP", 3)
            with web(db) as (client, source):
                got = page(client, query)
                assert not source._entries  # read by spans
        assert got.texts == want.texts
        assert got.links == want.links


class TestLongCharts:
    def test_charts_read_the_head_and_the_stored_states(
        self, long_db: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Past ``_BACKGROUND`` events the charts read the head alone and sample statuses
        at the stored states (seq 0, the snapshot at 500, which is also a checkpoint, the head),
        with their counts; the turn charts and table are the whole log's."""
        with web(long_db) as (client, _):
            want = page(client, "/charts?s=long")
        monkeypatch.setattr(actors._web._source, "_WHOLE", 100)
        monkeypatch.setattr(actors._web._source, "_BACKGROUND", 100)

        def whole(*args: object, **kwargs: object) -> None:
            raise AssertionError("the whole log was read")

        monkeypatch.setattr(SQLiteStore, "load_timeline", whole)
        with web(long_db) as (client, _):
            got = page(client, "/charts?s=long")
        for part in ("chart-latency", "chart-tokens", "chart-cost", "turns"):
            assert got.texts[part] == want.texts[part]
        assert "the stored states" in got.text("chart-statuses")
        assert "the stored states" not in want.text("chart-statuses")
        columns = re.findall(r'<a href="/session\?s=long&amp;at=(\d+)"><rect class="hit"', got.html)
        assert columns == ["0", "500", "560"]
        with SQLiteStore(long_db) as store:
            line = store.load_span("long", 0)
        tips = re.findall(r"<title>(seq \d+: [^<]*)</title>", got.html)
        assert tips == [
            f"seq {seq}: " + ", ".join(f"{n} {s}" for s, n in line.at(seq).status_counts().items())
            for seq in (0, 500, 560)
        ]


class TestLongMessages:
    """A message's page of a long session finds the events that touched it from the head's
    turns and the events that may name it, not by reading every event."""

    def test_a_message_page_reads_as_the_whole_log(
        self, long_db: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Inputs, tool calls, results and replies, at the head and before: the same page
        as from the whole log; a message not there yet is the same 404."""
        with SQLiteStore(long_db) as store:
            head = store.load_state("long")
        ids = [m.id for m in head.messages[::9]] + ["tc000013", "tc000026", "q000013b"]
        ids += [head.messages[-1].id]
        paths = [f"/message?s=long&id={i}" for i in ids]
        paths += [f"/message?s=long&id={ids[3]}&at=300", f"/message?s=long&id={ids[-1]}&at=-2"]
        with web(long_db) as (client, _):
            want = [client.get(path) for path in paths]
        monkeypatch.setattr(actors._web._source, "_WHOLE", 100)
        monkeypatch.setattr(actors._web._source, "_BACKGROUND", 100)

        def whole(*args: object, **kwargs: object) -> None:
            raise AssertionError("the whole log was read")

        monkeypatch.setattr(SQLiteStore, "load_timeline", whole)
        with web(long_db) as (client, source):
            for path, expected in zip(paths, want, strict=True):
                got = client.get(path)
                assert (got.status_code, got.text) == (expected.status_code, expected.text), path
            assert not source._entries

    def test_a_cached_timeline_answers_without_searching(
        self, long_db: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Once every state is cached (a mid-sized session, loaded behind its first page),
        a message's page reads them rather than search the store."""
        monkeypatch.setattr(actors._web._source, "_WHOLE", 100)
        with web(long_db) as (client, source):
            page(client, "/session?s=long")
            assert source.wait_loaded(timeout=60)

            def searched(*args: object, **kwargs: object) -> None:
                raise AssertionError("the store was searched")

            monkeypatch.setattr(SQLiteStore, "mentions", searched)
            assert "message_added" in page(client, "/message?s=long&id=q000001").text("touched")

    def test_a_fork_s_inherited_messages_read_as_the_whole_log(
        self, long_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A fork's messages were added by its first event (seq 1) and carry the source's
        turns: the same pages as from the whole log."""
        db = tmp_path / "fork.db"
        db.write_bytes(long_db.read_bytes())
        source = actors._web._source.Source(str(db))
        source.fork("long", 300, "branch")
        with SQLiteStore(db) as store:
            head = store.load_state("branch")
        paths = [f"/message?s=branch&id={m.id}" for m in head.messages[::7]]
        with web(db) as (client, _):
            want = [client.get(path) for path in paths]
        assert "branch_imported" in want[0].text
        monkeypatch.setattr(actors._web._source, "_WHOLE", 0)
        monkeypatch.setattr(actors._web._source, "_BACKGROUND", 0)
        with web(db) as (client, source):
            for path, expected in zip(paths, want, strict=True):
                got = client.get(path)
                assert (got.status_code, got.text) == (expected.status_code, expected.text), path
            assert not source._entries

    def test_approvals_rollbacks_and_open_calls_read_as_the_whole_log(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A tool call asked for approval, a turn ended in error with a call still open,
        a turn interrupted with one open, a rollback: every message's page as from the
        whole log (these are read with the states around them)."""
        events = agent_session(120, "ap")
        state = replay(events).head
        clock = [events[-1].at]

        def emit(make: Any) -> None:
            nonlocal state
            clock[0] += timedelta(seconds=1)
            event = make(session_id="ap", seq=state.seq + 1, at=clock[0])
            state = apply(state, event)
            events.append(event)

        def add(category: Category, mid: str, **fields: Any) -> None:
            message = new_message(category, id=mid, session_id="ap", created_at=clock[0], **fields)
            emit(lambda **kw: MessageAdded(message=message, **kw))

        for n, outcome in ((1, TurnOutcome.ERROR), (2, TurnOutcome.INTERRUPTED)):
            turn, call = f"t_ap{n}", ToolCall(id=f"call_ap{n}", name="rm", arguments={})
            add(Category.USER_QUESTION, f"q_ap{n}", sender="Chii", content="Clean up.")
            emit(lambda turn=turn, **kw: TurnStarted(turn_id=turn, **kw))
            add(Category.TOOL_CALL, f"tc_ap{n}", turn_id=turn, parent_id=f"q_ap{n}", tool_call=call)
            emit(
                lambda turn=turn, c=call.id, **kw: ApprovalRequested(turn_id=turn, call_id=c, **kw)
            )
            emit(
                lambda turn=turn, c=call.id, **kw: ApprovalDecided(
                    turn_id=turn, call_id=c, approved=True, by="Chii", **kw
                )
            )
            emit(lambda turn=turn, o=outcome, **kw: TurnEnded(turn_id=turn, outcome=o, **kw))
        emit(lambda **kw: RolledBack(to_seq=len(events) - 8, reason="undo", **kw))
        add(Category.USER_QUESTION, "q_after", sender="Chii", content="Again.")
        db = tmp_path / "ap.db"
        with SQLiteStore(db, snapshot_every=20) as store:
            store.append(events)
        paths = [f"/message?s=ap&id={m.id}" for m in state.messages[-30:]]
        paths += [f"/message?s=ap&id=tc_ap1&at={len(events) - 9}"]
        with web(db) as (client, _):
            want = [client.get(path) for path in paths]
        assert "approval_decided" in want[paths.index("/message?s=ap&id=tc_ap1")].text
        assert "rolled_back" in want[paths.index("/message?s=ap&id=tc_ap2")].text
        monkeypatch.setattr(actors._web._source, "_WHOLE", 10)
        monkeypatch.setattr(actors._web._source, "_BACKGROUND", 10)
        with web(db) as (client, source):
            for path, expected in zip(paths, want, strict=True):
                got = client.get(path)
                assert (got.status_code, got.text) == (expected.status_code, expected.text), path
            assert not source._entries

    @settings(
        max_examples=12,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(log=session_events(max_steps=50, rich=True), at=st.integers(0, 10**6))
    def test_random_sessions_list_the_events_the_whole_log_does(
        self,
        tmp_path_factory: pytest.TempPathFactory,
        monkeypatch: pytest.MonkeyPatch,
        log: list[Event],
        at: int,
    ) -> None:
        """For every message of random sessions (rollbacks, approvals, recovered and
        interrupted turns): the page as from the whole log."""
        db = tmp_path_factory.mktemp("messages") / "m.db"
        with SQLiteStore(db, snapshot_every=7) as store:
            store.append(log)
            head = store.load_state("s")
        seq = at % (len(log) + 1)
        paths = [f"/message?s=s&id={m.id}&at={seq}" for m in head.messages]
        with web(db) as (client, _):
            want = [client.get(path) for path in paths]
        with monkeypatch.context() as patch:
            patch.setattr(actors._web._source, "_WHOLE", 0)
            patch.setattr(actors._web._source, "_BACKGROUND", 0)
            patch.setattr(actors._web._source, "_GAP", 3)
            with web(db) as (client, source):
                for path, expected in zip(paths, want, strict=True):
                    got = client.get(path)
                    assert (got.status_code, got.text) == (expected.status_code, expected.text)
                assert not source._entries
