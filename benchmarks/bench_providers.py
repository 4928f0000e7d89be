"""Provider benchmark: what Amber adds to a streamed model call, against the raw SDK.

Run from the repository root::

    python benchmarks/bench_providers.py            # full run (~1 min on 2 cores)
    python benchmarks/bench_providers.py --quick    # smoke run for CI (seconds)
    python benchmarks/bench_providers.py --check    # exit 1 when a limit is broken

A local stub server (real HTTP on 127.0.0.1, in a process of its own so that
it does not compete for this one's GIL, as a remote API would not) sends a
reply of ``--chunks`` text pieces in each provider's wire format, all at once,
so that the client sets the pace: what is measured is the client's work per
chunk. In the same trio loop, rounds alternate between

- **raw**: the official SDK alone (the same client class and options Amber
  uses), iterating the stream's events;
- **amber**: the provider model's ``stream(request)``, each chunk then
  stepped through the turn machine (``runtime.step`` with a ``ModelChunk``):
  the chunk is folded into the call's ``Assembly`` and announced as a
  ``StreamDelta`` — what the session actor does with it, minus the actor's
  mailbox hop (a pykka ``tell``, ≈7 µs, DESIGN §13).

Figures are medians over the rounds, with CPython's GC on:

- **first token**: from asking (``create`` for raw; ``stream`` for Amber,
  which also builds the payload from the view, digests it and reports it)
  to the first text piece (for Amber: stepped through the machine);
- **per chunk**: the CPU time this process spent on the whole stream
  (``time.process_time``: the SDK's decoding, and for Amber its chunks and
  the machine's steps), divided by the pieces. CPU time, not wall-clock: on
  a shared machine other processes' load would otherwise be counted as
  Amber's.

Amber's overhead is the median, over the rounds, of the difference between
the Amber run and the raw run of the same round (run back to back, their
order alternating), so that the machine's load and the server's pace
cancel out.

A third figure needs no network: the SDK event objects of one stream are
collected once, then mapped to chunks and stepped through the machine
(``mapping``, wall-clock per event): Amber's own code alone.

``--check`` applies issue 14's limits to the medians: ≤ 1 ms added to the
first token, ≤ 30 µs added per chunk.
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing
import os
import platform
import statistics
import sys
import time
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

try:
    import runtime  # noqa: F401
except ImportError:  # a plain checkout, not installed: use the repository root
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import trio

from actors.providers import AnthropicModel, GeminiModel, OpenAIModel, OpenAIResponsesModel
from actors.providers._base import ProviderModel
from actors.providers.testing import Reply, StubServer
from runtime import (
    CallModel,
    Category,
    Draft,
    InputArrived,
    MessageAdded,
    ModelChunk,
    ModelRequest,
    Resume,
    SessionMachine,
    SessionState,
    StreamDelta,
    TextDelta,
    Timeline,
    TurnEnded,
    TurnOutcome,
    TurnSettings,
    TurnStarted,
    new_message,
    step,
)

FIRST_TOKEN_LIMIT_MS = 1.0
PER_CHUNK_LIMIT_US = 30.0
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


# -- the stub's streams -------------------------------------------------------------


def _openai_events(pieces: list[str]) -> list[dict[str, Any]]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return {"data": {"id": "chatcmpl-b", "object": "chat.completion.chunk", "created": 1,
                         "model": "gpt-4.1-mini-2025-04-14", "choices": [choice]}}  # fmt: skip

    usage = {"data": {"id": "chatcmpl-b", "object": "chat.completion.chunk", "created": 1,
                      "model": "gpt-4.1-mini-2025-04-14", "choices": [],
                      "usage": {"prompt_tokens": 10, "completion_tokens": len(pieces),
                                "total_tokens": 10 + len(pieces)}}}  # fmt: skip
    body = [chunk({"content": p}) for p in pieces]
    return [chunk({"role": "assistant", "content": ""}), *body, chunk({}, "stop"), usage,
            {"data": "[DONE]"}]  # fmt: skip


def _anthropic_events(pieces: list[str]) -> list[dict[str, Any]]:
    def event(kind: str, **data: Any) -> dict[str, Any]:
        return {"event": kind, "data": {"type": kind, **data}}

    start = event("message_start", message={
        "id": "msg_b", "type": "message", "role": "assistant", "content": [],
        "model": "claude-sonnet-4-6", "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1}})  # fmt: skip
    return [
        start,
        event("content_block_start", index=0, content_block={"type": "text", "text": ""}),
        *[event("content_block_delta", index=0, delta={"type": "text_delta", "text": p})
          for p in pieces],
        event("content_block_stop", index=0),
        event("message_delta", delta={"stop_reason": "end_turn", "stop_sequence": None},
              usage={"output_tokens": len(pieces)}),
        event("message_stop"),
    ]  # fmt: skip


def _gemini_events(pieces: list[str]) -> list[dict[str, Any]]:
    def chunk(text: str, finish: str | None = None) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"parts": [{"text": text}], "role": "model"},
                                     "index": 0}  # fmt: skip
        if finish:
            candidate["finishReason"] = finish
        return {"data": {"candidates": [candidate], "modelVersion": "gemini-2.5-flash",
                         "responseId": "r_b"}}  # fmt: skip

    return [chunk(p) for p in pieces[:-1]] + [chunk(pieces[-1], "STOP")]


def _responses_events(pieces: list[str]) -> list[dict[str, Any]]:
    def event(kind: str, **data: Any) -> dict[str, Any]:
        return {"event": kind, "data": {"type": kind, "sequence_number": 0, **data}}

    response = {"id": "resp_b", "object": "response", "created_at": 1, "status": "in_progress",
                "model": "gpt-4.1-mini", "output": [], "usage": None}  # fmt: skip
    item = {"id": "msg_b", "type": "message", "status": "in_progress", "role": "assistant",
            "content": []}  # fmt: skip
    usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
             "output_tokens": len(pieces), "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": 10 + len(pieces)}  # fmt: skip
    return [
        event("response.created", response=response),
        event("response.output_item.added", output_index=0, item=item),
        *[event("response.output_text.delta", item_id="msg_b", output_index=0,
                content_index=0, delta=p) for p in pieces],
        event("response.completed", response={**response, "status": "completed",
                                                "usage": usage}),
    ]  # fmt: skip


PROVIDERS: dict[str, tuple[type[ProviderModel], str, Callable[[list[str]], Any], str]] = {
    "openai": (OpenAIModel, "gpt-4.1-mini", _openai_events, "/v1"),
    "openai-responses": (OpenAIResponsesModel, "gpt-4.1-mini", _responses_events, "/v1"),
    "anthropic": (AnthropicModel, "claude-sonnet-4-6", _anthropic_events, ""),
    "gemini": (GeminiModel, "gemini-2.5-flash", _gemini_events, ""),
}


# -- the machine side ----------------------------------------------------------------


def _history(turns: int) -> SessionState:
    """A session of ``turns`` finished turns (a question and a reply each)."""
    if not turns:
        return SessionState.empty("bench")
    timeline = Timeline.start("bench")
    seq = 0

    def add(cls: Any, **fields: Any) -> None:
        nonlocal timeline, seq
        seq += 1
        timeline = timeline.append(
            cls(session_id="bench", seq=seq, at=EPOCH + timedelta(seconds=seq), **fields)
        )

    for turn in range(turns):
        add(MessageAdded, message=new_message(
            Category.USER_QUESTION, id=f"q{turn}", session_id="bench", created_at=EPOCH,
            content=f"Question {turn}: what about the weather in city number {turn}?",
            sender="me"))  # fmt: skip
        add(TurnStarted, turn_id=f"t{turn}")
        add(MessageAdded, message=new_message(
            Category.REPLY, id=f"a{turn}", session_id="bench", created_at=EPOCH,
            turn_id=f"t{turn}", content=f"Answer {turn}: sunny, 24 degrees."))  # fmt: skip
        add(TurnEnded, turn_id=f"t{turn}", outcome=TurnOutcome.PROCESSED)
    return timeline.head


_STATES: dict[int, SessionState] = {}


class Machine:
    """A session machine with a turn whose model call is running (the chunks' target)."""

    history = 0
    """Finished turns in the session before this one (set by ``bench``)."""

    def __init__(self, request_source: list[ModelRequest]) -> None:
        self.settings = TurnSettings(system_prompt="Be brief.", model_timeout=None,
                                     passivate_after=None)  # fmt: skip
        if self.history not in _STATES:
            _STATES[self.history] = _history(self.history)
        self.machine = SessionMachine.load(_STATES[self.history])
        self.now = 0.0
        draft = Draft(category=Category.USER_QUESTION, content="Weather in Tokyo?", sender="me")
        self._step(InputArrived(draft=draft, **self.stamp()))
        decision = self._step(Resume(**self.stamp()))
        (call,) = [c for c in decision.commands if isinstance(c, CallModel)]
        self.run_id = call.run_id
        self.request = call.request
        request_source.append(call.request)
        self.announced = 0

    def stamp(self) -> dict[str, Any]:
        self.now += 1e-6
        return {"at": EPOCH + timedelta(seconds=self.now), "mono": self.now}

    def _step(self, item: Any) -> Any:
        decision = step(self.machine, self.settings, item)
        self.machine = decision.machine
        return decision

    def chunk(self, chunk: Any) -> None:
        decision = self._step(ModelChunk(run_id=self.run_id, chunk=chunk, **self.stamp()))
        for command in decision.commands:
            if type(command) is StreamDelta:
                self.announced += 1


# -- runs -----------------------------------------------------------------------------


async def raw_run(model: ProviderModel, payload: dict[str, Any]) -> tuple[float, float, int]:
    """(seconds to the first text, CPU seconds of the whole stream, text events), SDK alone."""
    client = model._client()
    provider = model.provider
    first = None
    count = 0
    started = time.perf_counter()
    cpu = time.process_time()
    if provider == "gemini":
        stream = await client.aio.models.generate_content_stream(**payload)
        async for response in stream:
            if response.candidates and response.candidates[0].content.parts[0].text:
                count += 1
                if first is None:
                    first = time.perf_counter()
    else:
        if provider == "anthropic":
            stream = await client.messages.create(**payload)
        elif provider == "openai-responses":
            stream = await client.responses.create(**payload)
        else:
            stream = await client.chat.completions.create(**payload)
        async for event in stream:
            text = _event_text(provider, event)
            if text:
                count += 1
                if first is None:
                    first = time.perf_counter()
    assert first is not None
    return first - started, time.process_time() - cpu, count


def _event_text(provider: str, event: Any) -> str | None:
    if provider == "anthropic":
        return event.delta.text if event.type == "content_block_delta" else None
    if provider == "openai-responses":
        return event.delta if event.type == "response.output_text.delta" else None
    choices = event.choices
    return choices[0].delta.content if choices else None


async def amber_run(model: ProviderModel, machine: Machine) -> tuple[float, float, int]:
    """(seconds to the first text stepped through the machine, CPU seconds of the whole
    stream, text chunks)."""
    first = None
    count = 0
    started = time.perf_counter()
    cpu = time.process_time()
    stream = model.stream(machine.request)
    async for chunk in stream:
        machine.chunk(chunk)
        if type(chunk) is TextDelta and chunk.text:
            count += 1
            if first is None:
                first = time.perf_counter()
    assert first is not None
    return first - started, time.process_time() - cpu, count


async def cpu_mapping(model: ProviderModel, machine: Machine, rounds: int) -> float:
    """Seconds per SDK event to map it to chunks and step them, with no network."""
    events: list[Any] = []
    payload = model.payload(machine.request)
    client = model._client()
    if model.provider == "gemini":
        events = [e async for e in await client.aio.models.generate_content_stream(**payload)]
    elif model.provider == "anthropic":
        events = [e async for e in await client.messages.create(**payload)]
    elif model.provider == "openai-responses":
        events = [e async for e in await client.responses.create(**payload)]
    else:
        events = [e async for e in await client.chat.completions.create(**payload)]

    async def replay() -> AsyncIterator[Any]:
        for event in events:
            yield event

    times = []
    for _ in range(rounds):
        target = Machine([])
        started = time.perf_counter()
        async for chunk in model._chunks(replay()):
            target.chunk(chunk)
        times.append((time.perf_counter() - started) / len(events))
    return statistics.median(times)


def _serve(replies: list[Reply], pipe: Any) -> None:
    """The stub server, in its own process: send its URL, serve until told to stop."""
    with StubServer() as server:
        server.queue(*replies)
        pipe.send(server.url)
        pipe.recv()


class _Server:
    """A stub server in another process, with every reply of a benchmark queued up front."""

    def __init__(self, replies: list[Reply]) -> None:
        here, there = multiprocessing.Pipe()
        self._pipe = here
        self._process = multiprocessing.Process(target=_serve, args=(replies, there), daemon=True)
        self._process.start()
        self.url: str = here.recv()

    def close(self) -> None:
        self._pipe.send("stop")
        self._process.join(10)


async def bench(provider: str, chunks: int, rounds: int, history: int = 0) -> dict[str, float]:
    Machine.history = history
    cls, name, make_events, suffix = PROVIDERS[provider]
    pieces = [f"word{i} " for i in range(chunks)]
    reply = Reply.sse(make_events(pieces), burst=True)
    server = _Server([reply] * (2 * (rounds + 1) + 1))
    try:
        model = cls(name, api_key="bench", base_url=server.url + suffix, max_retries=0)
        requests: list[ModelRequest] = []
        firsts: dict[str, list[float]] = {"raw": [], "amber": []}
        totals: dict[str, list[float]] = {"raw": [], "amber": []}
        counted = {"raw": 0, "amber": 0}
        for number in range(rounds + 1):  # round 0 warms the connection pool up
            # Each round runs both, in alternating order: the pair shares the machine's load.
            for kind in ("raw", "amber") if number % 2 else ("amber", "raw"):
                if kind == "raw":
                    Machine(requests)
                    first, total, count = await raw_run(model, model.payload(requests[-1]))
                else:
                    machine = Machine(requests)
                    first, total, count = await amber_run(model, machine)
                    assert machine.announced == count, "every text chunk is announced"
                if number:
                    firsts[kind].append(first)
                    totals[kind].append(total)
                    counted[kind] = count
        mapping = await cpu_mapping(model, Machine(requests), max(3, rounds))
        await model.aclose()
    finally:
        server.close()
    assert counted["raw"] == counted["amber"] == chunks, counted

    def paired(values: dict[str, list[float]]) -> float:
        return statistics.median(a - r for a, r in zip(values["amber"], values["raw"], strict=True))

    return {
        "raw_first_ms": statistics.median(firsts["raw"]) * 1e3,
        "amber_first_ms": statistics.median(firsts["amber"]) * 1e3,
        "added_first_ms": paired(firsts) * 1e3,
        "raw_chunk_us": statistics.median(totals["raw"]) / chunks * 1e6,
        "amber_chunk_us": statistics.median(totals["amber"]) / chunks * 1e6,
        "added_chunk_us": paired(totals) / chunks * 1e6,
        "mapping_us": mapping * 1e6,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run (CI)")
    parser.add_argument("--check", action="store_true", help="exit 1 when a limit is broken")
    parser.add_argument("--chunks", type=int, help="text pieces per stream")
    parser.add_argument("--rounds", type=int, help="rounds of each (raw, amber)")
    parser.add_argument("--provider", choices=[*PROVIDERS, "all"], default="all")
    parser.add_argument(
        "--history", type=int, help="finished turns before the call (default: 0, then 500)"
    )
    args = parser.parse_args()
    chunks = args.chunks or (60 if args.quick else 400)
    rounds = args.rounds or (3 if args.quick else 25)
    names = list(PROVIDERS) if args.provider == "all" else [args.provider]
    print(
        f"bench_providers: {chunks} text pieces per stream, {rounds} rounds, GC on; "
        f"Python {platform.python_version()}, {os.cpu_count()} cores"
    )
    header = (
        f"{'provider':<17}{'first raw':>11}{'first amber':>13}{'added':>9}"
        f"{'chunk raw':>11}{'chunk amber':>13}{'added':>9}{'mapping':>9}"
    )
    print(header)
    failed = []
    assert gc.isenabled()
    runs = [(name, args.history or 0) for name in names]
    if args.history is None and not args.quick:
        runs.append(("anthropic", 500))  # the first token grows with the view: a longer session
    for name, history in runs:
        r = trio.run(bench, name, chunks, rounds, history)
        label = name if not history else f"{name}, {history * 2} msgs"
        print(
            f"{label:<17}{r['raw_first_ms']:>9.2f}ms{r['amber_first_ms']:>11.2f}ms"
            f"{r['added_first_ms']:>7.2f}ms{r['raw_chunk_us']:>9.1f}µs"
            f"{r['amber_chunk_us']:>11.1f}µs{r['added_chunk_us']:>7.1f}µs{r['mapping_us']:>7.1f}µs"
        )
        if r["added_first_ms"] > FIRST_TOKEN_LIMIT_MS and not history:
            failed.append(f"{name}: +{r['added_first_ms']:.2f} ms to the first token")
        if r["added_chunk_us"] > PER_CHUNK_LIMIT_US:
            failed.append(f"{name}: +{r['added_chunk_us']:.1f} µs per chunk")
    print(
        f"limits: ≤ {FIRST_TOKEN_LIMIT_MS:g} ms added to the first token, "
        f"≤ {PER_CHUNK_LIMIT_US:g} µs added per chunk (medians)"
    )
    if args.check and failed:
        print("FAILED: " + "; ".join(failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
