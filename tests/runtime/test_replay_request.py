"""Request records in audit rows: stored, decoded, and turned back into the exact payload."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import Session

from runtime import (
    AuditStatus,
    ModelCallFinished,
    ModelCallStarted,
    ModelRetry,
    ProjectionError,
    SessionState,
    ToolSpec,
    Window,
    build_payload,
    clean_history,
    digest,
    find_call,
    from_json,
    rebuild_request,
    request_record,
    to_json,
    views_of,
)
from runtime.store import SQLiteStore

TOOLS = (ToolSpec(name="lookup", description="Look up.", parameters={"type": "object"}),)


def call(
    session: Session,
    number: int,
    *,
    provider: str = "anthropic",
    window: Window | None = None,
    system: str | None = "Be brief.",
    params: dict[str, Any] | None = None,
    key: str | None = None,
) -> None:
    """Record call ``number`` of turn t1, built from the head's view, the machine's way."""
    state = session.state
    view = clean_history(state, window=window)
    payload = build_payload(
        provider, view, model="m", system=system,
        tools=[{"name": t.name, "description": t.description, "parameters": t.parameters}
               for t in TOOLS],
        params=params or {},
    )  # fmt: skip
    known = {
        d
        for row in state.audit.values()
        if row.request is not None
        for d in (row.request.system_digest, row.request.tools_digest)
        if d is not None
    }
    record = request_record(
        view=view, window=window, max_result_chars=20_000, system=system, tools=TOOLS,
        provider=provider, model="m", params=params or {}, payload_digest=digest(payload),
        known_digests=known,
    )  # fmt: skip
    source = key or f"t1#{number - 1}"
    session.do(
        ModelCallStarted, operation_id=f"op{number}", source_key=source, turn_id="t1",
        sequence=number, request=record,
    )  # fmt: skip
    session.do(
        ModelCallFinished, operation_id=f"op{number}", source_key=source,
        status=AuditStatus.COMPLETED, retries=[ModelRetry(attempt=1, status=429, delay=0.5)],
        cost_usd=0.001, response_model="m-2026",
    )  # fmt: skip


@pytest.fixture
def recorded(session: Session) -> Session:
    session.ask()
    session.start()
    call(session, 1)
    session.call("c1", "call_1")
    session.result("r1", "call_1")
    call(session, 2)
    return session


class TestRecords:
    def test_rebuilds_each_call_exactly(self, recorded: Session) -> None:
        """Both calls rebuild with the digest they recorded."""
        for number in (1, 2):
            rebuilt = rebuild_request(recorded.timeline, number)
            assert rebuilt.exact
            assert rebuilt.system == "Be brief."
            assert rebuilt.payload["tools"][0]["name"] == "lookup"

    def test_system_and_tools_stored_once(self, recorded: Session) -> None:
        """The second row names them by digest only."""
        first, second = recorded.state.model_calls()
        assert first.request is not None
        assert second.request is not None
        assert first.request.system == "Be brief."
        assert first.request.tools is not None
        assert second.request.system is None
        assert second.request.tools is None
        assert second.request.tools_digest == first.request.tools_digest

    def test_rows_survive_json_and_the_store(self, recorded: Session, tmp_path: Path) -> None:
        """The state (rows, records, retries, costs) survives JSON and an SQLite round trip."""
        state = recorded.state
        assert from_json(to_json(state), SessionState) == state
        with SQLiteStore(tmp_path / "a.db") as store:
            store.append(recorded.timeline.events())
            store.snapshot(state.session_id)
            loaded = store.load_timeline(state.session_id, from_snapshot=True)
            assert loaded.head == state
            whole = store.load_timeline(state.session_id)
        assert rebuild_request(whole, 2).exact
        row = whole.head.model_calls()[1]
        assert row.retries[0].delay == 0.5
        assert row.cost_usd == 0.001
        assert row.response_model == "m-2026"

    def test_views_of_names_the_call_of_a_seq(self, recorded: Session) -> None:
        """The call whose request a seq's view was is found by that seq."""
        rows = recorded.state.model_calls()
        assert rows[0].request is not None
        assert views_of(recorded.state, rows[0].request.view_seq) == (rows[0],)

    def test_a_changed_params_is_not_exact(self, recorded: Session) -> None:
        """The digest check catches a payload that differs from what was sent."""
        from runtime._replace import replace

        rebuilt = rebuild_request(recorded.timeline, 1)
        changed = replace(rebuilt, digest="sha256:other")
        assert not changed.exact


class TestErrors:
    def test_a_call_without_a_record(self, session: Session) -> None:
        """A scripted model's row has no request: the error says so."""
        session.ask()
        session.start()
        session.do(
            ModelCallStarted, operation_id="op1", source_key="t1#0", turn_id="t1", sequence=1
        )
        with pytest.raises(ProjectionError, match=r"recorded no request"):
            rebuild_request(session.timeline, 1)

    def test_no_such_call(self, recorded: Session) -> None:
        """The range of calls is named."""
        with pytest.raises(ProjectionError, match=r"has no model call 7; its calls are #1 to #2"):
            rebuild_request(recorded.timeline, 7)
        assert rebuild_request(recorded.timeline, "op2").row.sequence == 2
        assert rebuild_request(recorded.timeline, "t1#0").row.sequence == 1

    @pytest.mark.parametrize("wrong", [True, False, 1.0, None, b"op1"])
    def test_a_call_of_another_type(self, recorded: Session, wrong: object) -> None:
        """User trial: True was call #1 (``True == 1``) while ``Timeline.at(True)`` raises
        TypeError; a bool, a float or None is refused the same way."""
        kind = type(wrong).__name__
        message = (
            rf"^call must be an int \(its number\), a str \(its source key or operation id\) "
            rf"or an AuditRow \(got {wrong!r} that is a {kind!r}\)\.$"
        )
        with pytest.raises(TypeError, match=message):
            rebuild_request(recorded.timeline, wrong)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=message):
            find_call(recorded.state, wrong)  # type: ignore[arg-type]

    def test_a_custom_counter_needs_its_window(self, session: Session) -> None:
        """A window with a custom token counter cannot be rebuilt without it."""

        def words(text: str) -> int:
            return len(text.split())

        window = Window(max_tokens=1_000, count_tokens=words)
        session.ask()
        session.start()
        call(session, 1, window=window)
        with pytest.raises(
            ProjectionError, match=r"counted tokens with .*words.*pass the same Window"
        ):
            rebuild_request(session.timeline, 1)
        assert rebuild_request(session.timeline, 1, window=window).exact

    def test_an_unknown_provider_needs_its_builder(self, session: Session) -> None:
        """A custom model's provider: the caller passes its payload builder."""
        session.ask()
        session.start()
        call(session, 1)
        row = session.state.model_calls()[0]
        from runtime._replace import replace

        assert row.request is not None
        foreign = replace(row, request=replace(row.request, provider="mine"))
        with pytest.raises(ProjectionError, match=r"provider 'mine', which no payload builder"):
            rebuild_request(session.timeline, foreign)
        built = rebuild_request(
            session.timeline, foreign, builders={"mine": lambda view, **kw: {"n": len(view)}}
        )
        assert built.payload == {"n": 1}
        assert not built.exact
