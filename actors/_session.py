"""The session actor: the single writer of one session, and its turn loop (DESIGN §7).

Every change goes the same way: build events, check them against the head,
store them (the store thread commits durably), apply them, announce the
changed messages to the gateway. Model calls and tool runs are effects on
the trio loop; they report back by telling this actor, which ignores reports
from runs it has already cancelled (each run has an id).

The turn loop: inputs arrive; a turn claims every pending input; the model is
called with ``clean_history``; its thoughts and tool calls are recorded; tools
run; their results are recorded; the model is called again, until it answers
with text, which ends the turn ``processed`` with turn metrics. New input
mid-turn interrupts it (partial output is kept, unanswered tool calls become
interrupted) and a new turn starts that sees everything.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import pykka
import trio
from pykka import ThreadingFuture

from runtime import (
    INPUT_CATEGORIES,
    AmberError,
    AssembledCall,
    AuditCall,
    AuditConflict,
    AuditStatus,
    Category,
    Delta,
    DeltaKind,
    EventRejected,
    Message,
    MessageAdded,
    MessageStart,
    ModelCallFinished,
    ModelCallStarted,
    ModelRequest,
    ModelResponse,
    OrphanRecovered,
    ReasoningDelta,
    SessionState,
    Status,
    StatusChanged,
    StreamAssembler,
    StreamError,
    TextDelta,
    Timeline,
    ToolCall,
    ToolCallDelta,
    ToolOutcome,
    TurnEnded,
    TurnOutcome,
    TurnStarted,
    Update,
    approx_tokens,
    awaits_delivery,
    category_of,
    clean_history,
    new_message,
)
from runtime._events import Event

from ._services import Services
from ._tool_actor import RunTool, ToolDone

__all__ = ["SessionActor"]

log = logging.getLogger("amber.session")


_Spec = tuple[type[Event], dict[str, Any]]
"""An event to build: its class and fields (seq, session and time are added)."""


class ModelTimeout(TimeoutError):
    """A model call took longer than ``Settings.model_timeout``."""


class _Chunk:
    __slots__ = ("chunk", "run_id")

    def __init__(self, run_id: int, chunk: Any) -> None:
        self.run_id = run_id
        self.chunk = chunk


class _ModelEnded:
    __slots__ = ("duration_ms", "error", "run_id")

    def __init__(self, run_id: int, error: BaseException | None, duration_ms: float) -> None:
        self.run_id = run_id
        self.error = error
        self.duration_ms = duration_ms


class _Delivered:
    __slots__ = ("expected", "message_id")

    def __init__(self, message_id: str, expected: Status) -> None:
        self.message_id = message_id
        self.expected = expected


class _StartTurn:
    """Start a turn if input waits (told by the actor to itself, so callers need not wait)."""

    __slots__ = ()


class _Wake:
    __slots__ = ("kind", "token")

    def __init__(self, kind: str, token: int) -> None:
        self.kind = kind
        self.token = token


class _Run:
    """Bookkeeping of the active turn (the actor's, never stored)."""

    def __init__(self, turn_id: str, inputs: Sequence[Message]) -> None:
        self.turn_id = turn_id
        self.started = time.monotonic()
        last = inputs[-1] if inputs else None
        self.parent_id = last.id if last else None
        self.chatbot_id = last.chatbot_id if last else ""
        self.channel_id = last.channel_id if last else ""
        self.call_index = 0
        self.model_run = 0
        self.model_handle: Any = None
        self.assembler: StreamAssembler | None = None
        self.stream_id = ""
        self.tools: dict[str, tuple[int, Any]] = {}  # call id -> (run id, handle)
        self.tool_calls = 0
        self.tokens = 0
        self.context_tokens: int | None = None  # from usage, the window, or counted at the end
        self.last_view: Any = None
        self.nudges = 0
        self.source_key = ""  # the audit key of the current model call
        self.operation_id: str | None = None  # its audit row, once opened

    def handles(self) -> list[Any]:
        out = [handle for _, handle in self.tools.values()]
        if self.model_handle is not None:
            out.append(self.model_handle)
        return out


class SessionActor(pykka.ThreadingActor):
    """Owns one session: its timeline, its turn loop and its deliveries.

    Args:
        services: what the runtime shares with its sessions.
        session_id: the session.
    """

    def __init__(self, services: Services, session_id: str) -> None:
        super().__init__()
        self._svc = services
        self.session_id = session_id
        self.timeline = Timeline.start(session_id)
        self._run: _Run | None = None
        self._next_run_id = 0
        self._waiters: list[tuple[bool, ThreadingFuture[SessionState]]] = []
        self._awaiting: set[str] = set()  # messages an adapter will deliver
        self._tokens = {"idle": 0, "orphan": 0}  # the live timer of each kind
        self._idle_armed_at: int | None = None  # seq the idle timer was armed at
        self._closed = False

    # -- lifecycle -----------------------------------------------------------

    def on_start(self) -> None:
        """Rehydrate from the store; resume any pending input; re-announce undelivered output."""
        store = self._svc.store
        sid = self.session_id
        known = store.call(lambda s: sid in s).result(self._svc.settings.store_timeout)
        if known:
            self.timeline = store.call(lambda s: s.load_timeline(sid, from_snapshot=True)).result(
                self._svc.settings.store_timeout
            )
        state = self.state_now()
        for message in state:
            if message.active and awaits_delivery(message):
                self._announce_one(Update(session_id=sid, seq=state.seq, message=message))
        turn = state.active_turn
        if turn is not None:
            self._orphaned(turn.id)
        else:
            self._maybe_start_turn()
        self._after()

    def on_failure(self, *args: Any) -> None:  # pragma: no cover - logged by pykka too
        """Log an unexpected crash of the actor."""
        log.error("session actor %s crashed", self.session_id)

    # -- public API (asked through proxies) ------------------------------------

    def state_now(self) -> SessionState:
        """The session's head state."""
        return self.timeline.head

    def get_timeline(self) -> Timeline:
        """The states this actor has (from the snapshot it was loaded from)."""
        return self.timeline

    def add_input(self, message: Message) -> Message:
        """Store an input message; start a turn (interrupting the running one).

        Returns:
            The message as stored (``event_seq`` set).
        """
        self._check_open()
        category = category_of(message)
        if category not in INPUT_CATEGORIES:
            raise TypeError(
                f"add_input() takes inputs (user questions, cron prompts, compaction requests, "
                f"alerts); got a {category.label} ({message.id!r})."
            )
        self._commit([self._event(MessageAdded, message=message)])
        stored = self.state_now().message(message.id)
        if self._run is not None:
            self._end_turn(TurnOutcome.INTERRUPTED, f"interrupted by {message.id}")
        # Building the model's view can take a while on a long session: the caller
        # gets its answer once the input is stored, and the turn starts next.
        self.actor_ref.tell(_StartTurn())
        return stored

    def add_output(self, category: Category, content: str, **fields: Any) -> Message:
        """Store a notification (or another message that needs no turn) for the user."""
        self._check_open()
        message = new_message(
            category,
            id=self._svc.ids("msg"),
            session_id=self.session_id,
            created_at=self._svc.clock(),
            content=content,
            **fields,
        )
        self._commit([self._event(MessageAdded, message=message)])
        self._after()
        return self.state_now().message(message.id)

    def interrupt(self, reason: str = "interrupted by the user") -> bool:
        """Interrupt the running turn, if any; True if one was interrupted."""
        if self._run is None:
            return False
        self._end_turn(TurnOutcome.INTERRUPTED, reason)
        self.actor_ref.tell(_StartTurn())
        return True

    def when_idle(self, settled: bool = False) -> ThreadingFuture[SessionState]:
        """A future set (with the head) once no turn runs and no input waits.

        With ``settled=True`` it also waits until every message an adapter
        delivers has been reported delivered.
        """
        future: ThreadingFuture[SessionState] = ThreadingFuture()
        self._waiters.append((settled, future))
        self._notify()
        return future

    def is_idle(self) -> bool:
        """True when no turn runs and no input waits."""
        return self._run is None and not self.state_now().queued

    def close_if_idle(self, seq: int) -> bool:
        """Agree to passivate if nothing happened since ``seq`` and nothing is pending."""
        if self.is_idle() and self.state_now().seq == seq and not self._waiters:
            self._closed = True
            return True
        return False

    def shutdown(self) -> None:
        """Stop work for a runtime shutdown: a running turn gives its input back to pending.

        The input is answered when the session is next loaded.
        """
        run = self._run
        if run is not None:
            self._cancel(run)
            self._run = None
            try:
                self._commit(
                    [
                        self._event(
                            OrphanRecovered,
                            turn_id=run.turn_id,
                            reason="the runtime stopped during the turn; it restarts on next load",
                        )
                    ]
                )
            except Exception:
                log.exception("session %s: could not record the stopped turn", self.session_id)
        self._closed = True
        for _, future in self._waiters:
            stopped = RuntimeError("The runtime stopped before the session was idle.")
            future.set_exception((RuntimeError, stopped, None))
        self._waiters.clear()

    # -- messages from effects and adapters ----------------------------------

    def on_receive(self, message: Any) -> Any:
        """Handle reports from effects, tools, adapters and timers.

        A failure here (a store that cannot write, say) must not leave a turn
        hanging: the turn is failed if possible; if even that fails, the actor
        stops and the session is reloaded from the store on its next message.
        """
        try:
            self._receive(message)
        except Exception as exc:
            log.exception("session %s failed handling %s", self.session_id, type(message).__name__)
            try:
                if self._run is not None:
                    self._fail(f"the runtime failed: {type(exc).__name__}: {exc}")
                self._after()
            except Exception:
                log.exception("session %s cannot go on; it stops and reloads", self.session_id)
                self._svc.forget(self.session_id, self.actor_ref)
                self.stop()
        return None

    def _receive(self, message: Any) -> None:
        if isinstance(message, _Chunk):
            self._on_chunk(message)
        elif isinstance(message, _ModelEnded):
            self._on_model_ended(message)
        elif isinstance(message, ToolDone):
            self._on_tool_done(message)
        elif isinstance(message, _Delivered):
            self._on_delivered(message)
        elif isinstance(message, _Wake):
            self._on_wake(message)
        elif isinstance(message, _StartTurn):
            self._maybe_start_turn()
        else:
            log.warning("session %s ignores an unknown message %r", self.session_id, message)
            return
        self._after()

    # -- events ---------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise pykka.ActorDeadError(f"Session actor {self.session_id!r} is closing.")

    def _event(self, cls: type[Event], *, offset: int = 0, **fields: Any) -> Any:
        return cls(
            session_id=self.session_id,
            seq=self.timeline.head.seq + 1 + offset,
            at=self._svc.clock(),
            **fields,
        )

    def _events(self, *specs: tuple[type[Event], dict[str, Any]]) -> list[Event]:
        at = self._svc.clock()
        base = self.timeline.head.seq
        return [
            cls(session_id=self.session_id, seq=base + i + 1, at=at, **fields)
            for i, (cls, fields) in enumerate(specs)
        ]

    def _commit(self, events: list[Event]) -> None:
        """Check, store, apply, announce (DESIGN §7: persisted before applied)."""
        before = self.timeline
        after = before.extend(events)  # raises EventRejected; nothing stored
        self._svc.store.append(events).result(self._svc.settings.store_timeout)
        self.timeline = after
        previous = before.head
        for event in events:
            state = after.at(event.seq)
            self._announce(previous, state, event)
            previous = state

    def _announce(self, before: SessionState, after: SessionState, event: Event) -> None:
        ids: list[str]
        if isinstance(event, MessageAdded):
            ids = [event.message.id]
        elif isinstance(event, StatusChanged):
            ids = [event.message_id]
        elif isinstance(event, TurnStarted):
            turn = after.active_turn
            ids = list(turn.input_ids) if turn else []
        elif isinstance(event, TurnEnded | OrphanRecovered):
            turn = before.active_turn
            ids = list(turn.input_ids) + list(turn.open_calls.values()) if turn else []
            if isinstance(event, TurnEnded):
                ids += [m.id for m in event.partial]
        else:
            ids = [getattr(event, "message_id", "")] if hasattr(event, "message_id") else []
        for message_id in ids:
            new = after.get(message_id)
            if new is None:
                continue
            old = before.get(message_id)
            if old is not None and old is new:
                continue
            self._announce_one(
                Update(
                    session_id=self.session_id,
                    seq=after.seq,
                    message=new,
                    previous=None if old is None else old.status,
                )
            )

    def _announce_one(self, update: Update) -> None:
        message = update.message
        if not awaits_delivery(message):
            self._awaiting.discard(message.id)
        elif update.is_new and self._svc.gateway.expects_delivery(message):
            self._awaiting.add(message.id)
        self._svc.gateway.publish(update)

    # -- the turn loop ----------------------------------------------------------

    def _maybe_start_turn(self) -> None:
        state = self.state_now()
        if self._run is not None or not state.queued or self._closed:
            return
        turn_id = self._svc.ids("turn")
        self._commit([self._event(TurnStarted, turn_id=turn_id)])
        state = self.state_now()
        turn = state.active_turn
        assert turn is not None
        self._run = _Run(turn_id, [state.message(i) for i in turn.input_ids])
        self._call_model()

    def _call_model(self) -> None:
        run = self._run
        assert run is not None
        settings = self._svc.settings
        if run.call_index >= settings.max_model_calls:
            self._fail(
                f"the turn reached {settings.max_model_calls} model calls without a final "
                "answer (Settings.max_model_calls)"
            )
            return
        state = self.state_now()
        try:
            view = clean_history(
                state,
                window=settings.window,
                artifacts=settings.artifacts,
                max_result_chars=settings.max_result_chars,
            )
        except AmberError as exc:
            self._fail(f"the model's view could not be built: {exc}")
            return
        # Counting the view's tokens costs a walk of it; without a window it is
        # done once, when the turn ends, and only if the model reports no usage.
        run.context_tokens = view.tokens
        run.last_view = view
        request = ModelRequest(
            session_id=self.session_id,
            turn_id=run.turn_id,
            call_index=run.call_index,
            state=state,
            view=view,
            tools=self._svc.tool_specs,
            system=settings.system_prompt,
        )
        run.source_key = f"{run.turn_id}#{run.call_index}"
        run.operation_id = None
        run.call_index += 1
        run_id = self._new_run_id()
        run.model_run = run_id
        run.stream_id = self._svc.ids("run")
        run.assembler = StreamAssembler(fallback_id=run.stream_id)
        run.model_handle = self._svc.effects.submit(
            _model_effect(self._svc.model, request, self.actor_ref, run_id, settings.model_timeout),
            name=f"model {self.session_id}/{run.turn_id}#{run.call_index}",
        )

    def _new_run_id(self) -> int:
        self._next_run_id += 1
        return self._next_run_id

    def _on_chunk(self, report: _Chunk) -> None:
        run = self._run
        if run is None or report.run_id != run.model_run or run.assembler is None:
            return
        chunk = report.chunk
        if isinstance(chunk, MessageStart):
            if chunk.id:
                run.stream_id = chunk.id
            if not self._open_call(chunk.id or run.stream_id):
                return
        elif run.operation_id is None and not self._open_call(run.stream_id):
            return  # a stream without MessageStart: the row opens at its first chunk
        try:
            run.assembler.feed(chunk)
        except StreamError as exc:
            self._model_failed(f"the model's stream is malformed: {exc}", None)
            return
        if isinstance(chunk, MessageStart):
            return
        kind = index = name = None
        if isinstance(chunk, TextDelta):
            kind, text = DeltaKind.TEXT, chunk.text
        elif isinstance(chunk, ReasoningDelta):
            kind, text = DeltaKind.REASONING, chunk.text
        elif isinstance(chunk, ToolCallDelta):
            kind, text, index, name = DeltaKind.TOOL_CALL, chunk.arguments, chunk.index, chunk.name
        if kind is not None:
            self._svc.gateway.delta(
                Delta(
                    session_id=self.session_id,
                    turn_id=run.turn_id,
                    stream_id=run.stream_id,
                    kind=kind,
                    text=text,
                    chatbot_id=run.chatbot_id,
                    channel_id=run.channel_id,
                    index=index,
                    name=name,
                )
            )

    def _on_model_ended(self, report: _ModelEnded) -> None:
        run = self._run
        if run is None or report.run_id != run.model_run:
            return
        run.model_handle = None
        if report.error is not None:
            self._model_failed(_describe(report.error, "the model call failed"), report.duration_ms)
            return
        assert run.assembler is not None
        try:
            response = run.assembler.response()
        except StreamError as exc:
            self._model_failed(f"the model's stream is malformed: {exc}", report.duration_ms)
            return
        run.assembler = None
        if run.operation_id is None and not self._open_call(response.id or run.stream_id):
            return
        # The row's finish is stored in the same commit as what the answer leads to.
        finished: _Spec = (
            ModelCallFinished,
            {
                "operation_id": run.operation_id,
                "status": AuditStatus.COMPLETED,
                "duration_ms": report.duration_ms,
                "usage": response.usage,
                "content": response.text,
                "reasoning": response.reasoning,
                "tool_calls": [
                    AuditCall(id=c.id, name=c.name, arguments_json=c.arguments_json)
                    for c in response.tool_calls
                ],
                "stop_reason": response.stop_reason,
            },
        )
        if response.usage is not None:
            run.tokens += response.usage.total_tokens
            if response.usage.input_tokens:
                run.context_tokens = response.usage.input_tokens
        if response.is_empty:
            self._empty_response(finished)
        elif response.tool_calls:
            self._record_calls(response, finished)
        else:
            self._finish(response, finished)

    def _open_call(self, operation_id: str) -> bool:
        """Open (or, the same again, confirm) the audit row of the current model call.

        A start that contradicts the call's row fails the turn; returns False then.
        """
        run = self._run
        assert run is not None
        state = self.state_now()
        known = state.audit_keys.get(run.source_key)
        sequence = state.audit[known].sequence if known else len(state.audit) + 1
        try:
            self._commit(
                [
                    self._event(
                        ModelCallStarted,
                        operation_id=operation_id,
                        source_key=run.source_key,
                        turn_id=run.turn_id,
                        sequence=sequence,
                        model=self._svc.model_name,
                    )
                ]
            )
        except AuditConflict as exc:
            self._fail(f"the model-call audit refused the call's start: {exc}")
            return False
        run.operation_id = run.operation_id or operation_id
        return True

    def _model_failed(self, reason: str, duration_ms: float | None) -> None:
        """Close the current call's audit row as failed, then fail the turn."""
        run = self._run
        assert run is not None
        opened = run.operation_id is not None or self._open_call(run.stream_id)
        if opened and self._run is run:
            self._commit(
                [
                    self._event(
                        ModelCallFinished,
                        operation_id=run.operation_id,
                        status=AuditStatus.FAILED,
                        duration_ms=duration_ms,
                        error=reason,
                    )
                ]
            )
        if self._run is run:
            self._fail(reason)

    def _output(self, category: Category, content: str, **fields: Any) -> Message:
        run = self._run
        assert run is not None
        return new_message(
            category,
            id=self._svc.ids("msg"),
            session_id=self.session_id,
            created_at=self._svc.clock(),
            content=content,
            parent_id=fields.pop("parent_id", run.parent_id),
            turn_id=run.turn_id,
            chatbot_id=run.chatbot_id,
            channel_id=run.channel_id,
            sender=fields.pop("sender", self._svc.settings.agent_name),
            **fields,
        )

    def _empty_response(self, finished: _Spec) -> None:
        run = self._run
        assert run is not None
        limit = self._svc.settings.max_nudges
        if run.nudges >= limit:
            self._commit(self._events(finished))
            self._fail(f"the model answered with nothing {run.nudges + 1} times in a row")
            return
        run.nudges += 1
        nudge = self._output(
            Category.NUDGE,
            "[Empty response] Your last response was empty. Continue the task: answer the user "
            "or call a tool.",
            sender="System",
            metadata={"nudge": run.nudges},
        )
        self._commit(self._events(finished, (MessageAdded, {"message": nudge})))
        self._call_model()

    def _record_calls(self, response: ModelResponse, finished: _Spec) -> None:
        run = self._run
        assert run is not None
        messages: list[Message] = []
        if response.reasoning.strip():
            messages.append(self._output(Category.THOUGHT, response.reasoning))
        if response.text.strip():
            messages.append(self._output(Category.REPLY, response.text))
        immediate: list[tuple[Message, ToolOutcome]] = []
        runnable: list[tuple[Message, dict[str, Any]]] = []
        taken = set(self.state_now().tool_calls)
        for assembled in response.tool_calls:
            original = assembled.id
            if original in taken:
                # Some providers number calls per response (call_0, call_1 …); ids must be
                # unique in a session, so a reused one gets a fresh id (the original is kept).
                assembled = attrs.evolve(assembled, id=self._svc.ids("call"))
            taken.add(assembled.id)
            call_message, arguments, problem = self._call_message(assembled, original)
            messages.append(call_message)
            if problem is not None:
                immediate.append((call_message, problem))
            elif self._svc.tools.get(assembled.name) is None:
                immediate.append((call_message, self._svc.unknown_tool(assembled.name)))
            else:
                runnable.append((call_message, arguments))
        run.tool_calls += len(response.tool_calls)
        messages += [self._result_message(call, outcome) for call, outcome in immediate]
        specs: list[_Spec] = [finished, *((MessageAdded, {"message": m}) for m in messages)]
        self._commit(self._events(*specs))
        for call_message, arguments in runnable:
            assert call_message.tool_call is not None
            self._start_tool(call_message.tool_call, arguments)
        if not runnable:
            self._call_model()

    def _call_message(
        self, assembled: AssembledCall, original_id: str
    ) -> tuple[Message, dict[str, Any], ToolOutcome | None]:
        problem: ToolOutcome | None = None
        try:
            arguments = assembled.arguments()
            tool_call = ToolCall(
                id=assembled.id, name=assembled.name, arguments=arguments, index=assembled.index
            )
        except (ValueError, TypeError) as exc:
            arguments = {}
            tool_call = ToolCall(id=assembled.id, name=assembled.name, index=assembled.index)
            problem = ToolOutcome(
                content=f"{exc}", is_error=True, error_type="invalid_arguments", summary=None
            )
        metadata: dict[str, Any] = {"tool_name": assembled.name}
        if original_id != assembled.id:
            metadata["provider_call_id"] = original_id
        if problem is None:
            metadata["tool_arguments"] = dict(tool_call.arguments)
            shown = _pretty(arguments)
        else:
            metadata["raw_arguments"] = assembled.arguments_json
            shown = assembled.arguments_json
        content = f"Calling tool `{assembled.name}` with arguments:\n```json\n{shown}\n```"
        message = self._output(Category.TOOL_CALL, content, tool_call=tool_call, metadata=metadata)
        return message, arguments, problem

    def _result_message(self, call: Message, outcome: ToolOutcome) -> Message:
        assert call.tool_call is not None
        metadata: dict[str, Any] = {
            "tool_name": call.tool_call.name,
            "duration_ms": round(outcome.duration_ms, 3),
        }
        if outcome.summary is not None:
            metadata["tool_result"] = outcome.summary
        if outcome.truncated:
            metadata["truncated"] = True
        return self._output(
            Category.TOOL_RESULT,
            outcome.content,
            parent_id=call.id,
            sender=call.tool_call.name,
            tool_call_id=call.tool_call.id,
            is_error=outcome.is_error,
            error_type=outcome.error_type if outcome.is_error else None,
            metadata=metadata,
        )

    def _start_tool(self, call: ToolCall, arguments: dict[str, Any]) -> None:
        run = self._run
        assert run is not None
        run_id = self._new_run_id()
        handle = self._svc.effects.handle(f"tool {call.name} {call.id}")
        run.tools[call.id] = (run_id, handle)
        self._svc.tool_actor(call.name).tell(
            RunTool(
                run_id=run_id,
                call_id=call.id,
                arguments=arguments,
                reply_to=self.actor_ref,
                handle=handle,
            )
        )

    def _on_tool_done(self, report: ToolDone) -> None:
        run = self._run
        if run is None:
            return
        entry = run.tools.get(report.call_id)
        if entry is None or entry[0] != report.run_id:
            return
        del run.tools[report.call_id]
        call_message = self.state_now().message(self.state_now().tool_calls[report.call_id])
        self._commit(
            [self._event(MessageAdded, message=self._result_message(call_message, report.outcome))]
        )
        if not run.tools:
            self._call_model()

    def _finish(self, response: ModelResponse, finished: _Spec) -> None:
        run = self._run
        assert run is not None
        messages: list[Message] = []
        if response.reasoning.strip():
            messages.append(self._output(Category.THOUGHT, response.reasoning))
        elapsed = time.monotonic() - run.started
        if run.context_tokens is None:
            view = run.last_view
            run.context_tokens = sum(approx_tokens(m.text) for m in view.messages) if view else 0
        metrics = {
            "session_turns": len(self.state_now().turns) + 1,
            "context_tokens": run.context_tokens,
            "turn_tool_calls": run.tool_calls,
            "turn_tokens": run.tokens,
            "turn_time": round(elapsed, 3),
        }
        messages.append(
            self._output(Category.REPLY, response.text, metadata={"turn_metrics": metrics})
        )
        specs: list[_Spec] = [finished, *((MessageAdded, {"message": m}) for m in messages)]
        specs.append(
            (
                TurnEnded,
                {
                    "turn_id": run.turn_id,
                    "outcome": TurnOutcome.PROCESSED,
                    "metrics": metrics,
                    "duration_ms": elapsed * 1000,
                },
            )
        )
        self._commit(self._events(*specs))
        self._run = None
        self._maybe_start_turn()

    def _partial(self, run: _Run) -> list[Message]:
        assembler = run.assembler
        if assembler is None:
            return []
        out = []
        if assembler.reasoning.strip():
            out.append(self._output(Category.THOUGHT, assembler.reasoning))
        if assembler.text.strip():
            out.append(self._output(Category.REPLY, assembler.text))
        return out

    def _cancel(self, run: _Run) -> None:
        for handle in run.handles():
            handle.cancel()

    def _end_turn(self, outcome: TurnOutcome, reason: str, *, notice: str | None = None) -> None:
        run = self._run
        assert run is not None
        self._cancel(run)
        elapsed = time.monotonic() - run.started
        specs: list[tuple[type[Event], dict[str, Any]]] = []
        if notice is not None:
            crash = self._output(Category.CRASH_NOTICE, notice)
            specs.append((MessageAdded, {"message": crash}))
        specs.append(
            (
                TurnEnded,
                {
                    "turn_id": run.turn_id,
                    "outcome": outcome,
                    "reason": reason,
                    "duration_ms": elapsed * 1000,
                    "partial": self._partial(run),
                    "metrics": {
                        "turn_tool_calls": run.tool_calls,
                        "turn_tokens": run.tokens,
                        "turn_time": round(elapsed, 3),
                    },
                },
            )
        )
        self._run = None
        self._commit(self._events(*specs))

    def _fail(self, reason: str) -> None:
        log.warning("session %s: turn failed: %s", self.session_id, reason)
        self._end_turn(
            TurnOutcome.ERROR,
            reason,
            notice=f"Sorry, something went wrong and I could not finish: {reason.rstrip('.')}.",
        )
        # A failed turn does not retry by itself; new input starts the next one.
        self._maybe_start_turn()

    # -- deliveries, orphans, idleness --------------------------------------------

    def _on_delivered(self, report: _Delivered) -> None:
        state = self.state_now()
        message = state.get(report.message_id)
        if message is None or message.status is not report.expected:
            log.debug("session %s: stale delivery of %s", self.session_id, report.message_id)
            return
        try:
            self._commit(
                [
                    self._event(
                        StatusChanged,
                        message_id=report.message_id,
                        expected=report.expected,
                        status=Status.DELIVERED,
                    )
                ]
            )
        except EventRejected as exc:
            log.debug("session %s: delivery refused: %s", self.session_id, exc)

    def _orphaned(self, turn_id: str) -> None:
        """A turn left active by a runner that is gone: give its input back now or later."""
        state = self.state_now()
        turn = state.active_turn
        assert turn is not None
        assert state.updated_at is not None
        age = (self._svc.clock() - state.updated_at).total_seconds()
        wait = self._svc.settings.recover_after - age
        if wait <= 0:
            self._commit(
                [
                    self._event(
                        OrphanRecovered,
                        turn_id=turn_id,
                        reason=f"no activity for {age:.0f} s when the session was loaded; its "
                        "runner is presumed dead",
                    )
                ]
            )
            self._maybe_start_turn()
            return
        self._timer(wait, "orphan")

    def _timer(self, seconds: float, kind: str) -> None:
        """Tell this actor ``_Wake(kind)`` in ``seconds``; it replaces the timer of that kind."""
        token = self._tokens[kind] = self._tokens[kind] + 1
        wake = _Wake(kind, token)
        ref = self.actor_ref

        async def sleep_then_tell() -> None:
            await trio.sleep(seconds)
            _tell(ref, wake)

        self._svc.effects.submit(sleep_then_tell, name=f"timer {kind} {self.session_id}")

    def _on_wake(self, wake: _Wake) -> None:
        if wake.token != self._tokens[wake.kind]:
            return  # replaced by a later timer of the same kind
        if wake.kind == "orphan":
            turn = self.state_now().active_turn
            if turn is not None and self._run is None:
                self._orphaned(turn.id)
            return
        self._idle_armed_at = None
        if self.is_idle() and not self._closed:
            # The runtime asks close_if_idle(seq) from another thread; if anything
            # happens first, the seq differs and the actor stays.
            self._svc.passivate(self.session_id, self.actor_ref, self.state_now().seq)

    def _after(self) -> None:
        """After each message: wake idle waiters, arm the passivation timer.

        The timer is armed once per idle seq (re-armed after it fires, in case
        the runtime could not passivate), not on every message: re-arming on
        every wake would let two timers replace each other forever.
        """
        self._notify()
        passivate_after = self._svc.settings.passivate_after
        if passivate_after is None or self._closed:
            return
        if not self.is_idle():
            self._idle_armed_at = None
            return
        seq = self.state_now().seq
        if self._idle_armed_at != seq:
            self._idle_armed_at = seq
            self._timer(passivate_after, "idle")

    def _notify(self) -> None:
        if not self._waiters or not self.is_idle():
            return
        state = self.state_now()
        keep: list[tuple[bool, ThreadingFuture[SessionState]]] = []
        for settled, future in self._waiters:
            if settled and self._awaiting:
                keep.append((settled, future))
            else:
                future.set(state)
        self._waiters = keep


def _tell(ref: pykka.ActorRef[Any], message: Any) -> None:
    with contextlib.suppress(pykka.ActorDeadError):
        ref.tell(message)


def _model_effect(
    model: Any,
    request: ModelRequest,
    ref: pykka.ActorRef[Any],
    run_id: int,
    timeout: float | None,
) -> Callable[[], Any]:
    async def effect() -> None:
        started = time.monotonic()
        error: BaseException | None = None
        try:
            with trio.fail_after(timeout) if timeout else _nothing():
                async for chunk in model.stream(request):
                    _tell(ref, _Chunk(run_id, chunk))
        except trio.TooSlowError:
            error = ModelTimeout(
                f"the model did not finish within {timeout} s (Settings.model_timeout)"
            )
        except Exception as exc:
            error = exc
        _tell(ref, _ModelEnded(run_id, error, (time.monotonic() - started) * 1000))

    return effect


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *args: object) -> None:
        return None


def _describe(error: BaseException, what: str) -> str:
    text = str(error) or type(error).__name__
    return f"{what}: {type(error).__name__}: {text}" if what else text


def _pretty(arguments: dict[str, Any]) -> str:
    import orjson

    return orjson.dumps(arguments, option=orjson.OPT_INDENT_2).decode()
