"""Shared pieces for the provider tests: requests from states, models on the stub, a runner."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import attrs
import trio

from actors.providers import (
    AnthropicModel,
    GeminiModel,
    OpenAIModel,
    OpenAIResponsesModel,
    wire_request,
)
from actors.providers._base import ProviderModel
from actors.providers.testing import StubServer
from runtime import (
    Category,
    Chunk,
    ModelError,
    ModelRequest,
    ModelResponse,
    SessionState,
    StreamAssembler,
    TextDelta,
    Timeline,
    ToolSpec,
    clean_history,
    new_message,
)
from runtime._events import MessageAdded, TurnStarted

FIXTURES = Path(__file__).parent / "provider_fixtures"
T0 = datetime(2026, 5, 27, 12, 0, tzinfo=UTC)
MODELS: dict[str, tuple[type[ProviderModel], str]] = {
    "openai": (OpenAIModel, "gpt-4.1-mini"),
    "openai-responses": (OpenAIResponsesModel, "o4-mini"),
    "anthropic": (AnthropicModel, "claude-sonnet-4-6"),
    "gemini": (GeminiModel, "gemini-2.5-flash"),
}
LOOKUP = ToolSpec(
    name="lookup",
    description="Look up the weather of a city.",
    parameters={
        "type": "object",
        "properties": {"query": {"type": "string", "description": "The city."}},
        "required": ["query"],
    },
)


def base_url(provider: str, server: StubServer) -> str:
    """Where each SDK expects its API under the stub."""
    return server.url + "/v1" if provider.startswith("openai") else server.url


def model_for(provider: str, server: StubServer, **options: Any) -> ProviderModel:
    """A provider model pointed at the stub, with a test key and fast retries."""
    cls, name = MODELS[provider]
    options.setdefault("max_retries", 2)
    return cls(name, api_key="test-key", base_url=base_url(provider, server), **options)


def question(text: str = "Weather in Tokyo?", session_id: str = "sess") -> Timeline:
    """A session with one question and its turn started."""
    timeline = Timeline.start(session_id)
    message = new_message(
        Category.USER_QUESTION, id="u1", session_id=session_id, created_at=T0, content=text,
        sender="Chii",
    )  # fmt: skip
    timeline = timeline.append(MessageAdded(session_id=session_id, seq=1, at=T0, message=message))
    return timeline.append(
        TurnStarted(session_id=session_id, seq=2, at=T0 + timedelta(seconds=1), turn_id="t1")
    )


def request_for(
    state: SessionState,
    *,
    system: str | None = "Be brief.",
    tools: tuple[ToolSpec, ...] = (LOOKUP,),
    call_index: int = 0,
) -> ModelRequest:
    """The request the turn machine makes for ``state``'s active turn."""
    turn = state.active_turn_id or "t1"
    return ModelRequest(
        session_id=state.session_id,
        turn_id=turn,
        call_index=call_index,
        state=state,
        view=clean_history(state),
        tools=tools,
        system=system,
    )


@attrs.define
class Run:
    """What one streamed call gave."""

    chunks: list[Chunk] = attrs.Factory(list)
    response: ModelResponse | None = None
    partial: ModelResponse | None = None
    error: ModelError | None = None
    cancelled: bool = False


async def stream_once(
    model: ProviderModel, request: ModelRequest, *, cancel_after_text: bool = False
) -> Run:
    """Stream one call to the end (or to an error, or to a cancel after the first text)."""
    run = Run()
    assembler = StreamAssembler(fallback_id="run_1")
    with trio.CancelScope() as scope:
        try:
            async for chunk in model.stream(request):
                run.chunks.append(chunk)
                assembler.feed(chunk)
                if cancel_after_text and isinstance(chunk, TextDelta) and chunk.text:
                    scope.cancel()
        except ModelError as exc:
            run.error = exc
    run.cancelled = scope.cancelled_caught
    if run.error is None and not run.cancelled:
        run.response = assembler.response()
    else:
        run.partial = assembler.response()
    return run


def run_call(model: ProviderModel, request: ModelRequest, **options: Any) -> Run:
    """``stream_once`` on a fresh trio loop, closing the model's client after."""

    async def main() -> Run:
        try:
            return await stream_once(model, request, **options)
        finally:
            await model.aclose()

    return trio.run(main)


def wire(provider: str, payload: dict[str, Any]) -> Any:
    """The JSON body the SDK sends for ``payload``."""
    return wire_request(provider, payload)["body"]


class Recorder:
    """Stores model calls and their outputs the way the turn machine does (audit rows with
    their request records; thought, text and calls with ``response_metadata``)."""

    def __init__(self, timeline: Timeline) -> None:
        self.timeline = timeline
        self.ids = 0

    @property
    def state(self) -> SessionState:
        return self.timeline.head

    def _next(self, prefix: str) -> str:
        self.ids += 1
        return f"{prefix}{self.ids}"

    def _do(self, cls: Any, **fields: Any) -> None:
        head = self.timeline.head
        at = T0 + timedelta(seconds=head.seq + 1)
        event = cls(session_id=head.session_id, seq=head.seq + 1, at=at, **fields)
        self.timeline = self.timeline.append(event)

    def call(self, request: ModelRequest, response: ModelResponse) -> None:
        """Open and finish the call's audit row, store its outputs."""
        from runtime import (
            AuditStatus,
            ModelCallFinished,
            ModelCallStarted,
            ToolCall,
            request_record,
            response_metadata,
        )

        sent = response.request
        assert sent is not None
        known = {
            d
            for row in self.state.audit.values()
            if row.request is not None
            for d in (row.request.system_digest, row.request.tools_digest)
            if d is not None
        }
        record = request_record(
            view=request.view,
            window=request.window,
            max_result_chars=request.max_result_chars,
            system=request.system,
            tools=request.tools,
            provider=sent.provider,
            model=sent.model,
            params=sent.params,
            payload_digest=sent.payload_digest,
            base_url=sent.base_url,
            known_digests=known,
        )
        from runtime._audit import operation_key

        key = f"{request.turn_id}#{request.call_index}"
        operation = response.id or key
        if operation_key(request.turn_id, "assistant", operation) in self.state.audit_ops:
            operation = key  # the provider reused its id in this turn: the runtime's key
        self._do(
            ModelCallStarted,
            operation_id=operation,
            source_key=key,
            turn_id=request.turn_id,
            sequence=len(self.state.audit) + 1,
            model=sent.model,
            request=record,
        )
        self._do(
            ModelCallFinished,
            operation_id=operation,
            source_key=key,
            status=AuditStatus.COMPLETED,
            usage=response.usage,
            content=response.text,
            reasoning=response.reasoning,
            stop_reason=response.stop_reason,
        )
        meta = response_metadata(response.parts, provider=response.provider, source_key=key)
        turn = self.state.turn(request.turn_id)
        parent = turn.input_ids[-1] if turn is not None and turn.input_ids else None
        common = {
            "session_id": self.state.session_id,
            "turn_id": request.turn_id,
            "parent_id": parent,
        }
        if response.reasoning or meta.thought:
            thought = new_message(
                Category.THOUGHT, id=self._next("th"), created_at=T0,
                content=response.reasoning, metadata=meta.thought, **common,
            )  # fmt: skip
            self._do(MessageAdded, message=thought)
        if response.text or meta.text:
            text = new_message(
                Category.REPLY, id=self._next("a"), created_at=T0, content=response.text,
                metadata=meta.text, **common,
            )  # fmt: skip
            self._do(MessageAdded, message=text)
        for call in response.tool_calls:
            tool_call = ToolCall(
                id=call.id, name=call.name, arguments=call.arguments(), index=call.index
            )
            message = new_message(
                Category.TOOL_CALL, id=self._next("c"), created_at=T0, tool_call=tool_call,
                content=f"{call.name}({call.arguments_json})", metadata=meta.calls.get(call.index),
                **common,
            )  # fmt: skip
            self._do(MessageAdded, message=message)

    def result(self, call_id: str, text: str, name: str = "lookup") -> None:
        """A tool result for ``call_id``."""
        state = self.state
        call = state.message(state.tool_calls[call_id])
        message = new_message(
            Category.TOOL_RESULT, id=self._next("r"), session_id=state.session_id,
            created_at=T0, turn_id=call.turn_id, parent_id=call.id, tool_call_id=call_id,
            content=text, sender=name,
        )  # fmt: skip
        self._do(MessageAdded, message=message)
