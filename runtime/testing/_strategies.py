"""Hypothesis strategies for Amber values and whole sessions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import attrs
import orjson
from hypothesis import strategies as st

from .._category import Category, new_message
from .._events import (
    Event,
    MessageAdded,
    MetadataUpdated,
    OrphanRecovered,
    RolledBack,
    StatusChanged,
    TurnEnded,
    TurnOutcome,
    TurnStarted,
)
from .._input import InputLimits, UserInput
from .._json import thaw
from .._message import Attachment, BrowserElement, Message, Status, ToolCall
from .._reducer import apply
from .._responses import tool_call_text
from .._state import SessionState
from .._timeline import Timeline

__all__ = [
    "attachments",
    "browser_elements",
    "events",
    "json_values",
    "messages",
    "session_events",
    "timelines",
    "tool_calls",
    "user_inputs",
]

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
"""The integers a JSON store can write (orjson refuses larger ones); the kit draws no other."""
_ids = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_-", min_size=1, max_size=12)
_texts = st.text(max_size=40)
"""Any text (Hypothesis draws no lone surrogates, which no store keeps)."""
_words = st.text(min_size=1, max_size=40).filter(str.strip)
"""Text that is not blank: what every message but a tool's result needs to be stored by a
runtime (``post()`` and ``validate_input`` refuse blank text; a model's blank text or
reasoning is dropped, unless it carries provider data, as a signed thought does)."""
_times = st.integers(min_value=0, max_value=10**9).map(lambda s: EPOCH + timedelta(seconds=s))


def json_values(max_leaves: int = 10) -> st.SearchStrategy[Any]:
    """JSON-like values that round-trip exactly (finite floats, 64-bit ints, str keys)."""
    leaves = (
        st.none()
        | st.booleans()
        | st.integers(min_value=INT64_MIN, max_value=INT64_MAX)
        | st.floats(allow_nan=False, allow_infinity=False)
        | _texts
    )
    return st.recursive(
        leaves,
        lambda children: (
            st.lists(children, max_size=4) | st.dictionaries(_texts, children, max_size=4)
        ),
        max_leaves=max_leaves,
    )


def _json_objects() -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(_texts, json_values(), max_size=4)


def tool_calls() -> st.SearchStrategy[ToolCall]:
    """Tool calls with JSON arguments."""
    return st.builds(
        ToolCall,
        id=_ids.map(lambda s: f"call_{s}"),
        name=_ids,
        arguments=_json_objects(),
        index=st.integers(min_value=0, max_value=8),
    )


def attachments() -> st.SearchStrategy[Attachment]:
    """Attachment references (no bytes)."""
    return st.builds(
        Attachment,
        id=_ids,
        name=_ids.map(lambda s: f"{s}.png"),
        kind=st.sampled_from(["image", "file"]),
        media_type=st.sampled_from(["image/png", "text/csv", "application/pdf"]),
        size=st.integers(min_value=0, max_value=10**7),
        width=st.none() | st.integers(min_value=1, max_value=4096),
        height=st.none() | st.integers(min_value=1, max_value=4096),
        sha256=st.none() | st.text(alphabet="0123456789abcdef", min_size=64, max_size=64),
    )


def browser_elements() -> st.SearchStrategy[BrowserElement]:
    """Selected page elements."""
    return st.builds(
        BrowserElement,
        url=_ids.map(lambda s: f"https://example.com/{s}"),
        title=_texts,
        tag=st.sampled_from(["div", "a", "table"]),
        selector=_texts,
        text=_texts,
        html=_texts,
    )


def user_inputs(
    *, valid: bool = True, limits: InputLimits | None = None
) -> st.SearchStrategy[UserInput]:
    """User inputs that ``validate_input(input, limits)`` accepts, or (``valid=False``) rejects.

    Valid inputs: text, an attachment with empty text, browser elements with
    or without text. Invalid ones break one rule each: blank text with
    nothing attached, no sender, text over ``max_text_chars``, too many
    attachments or browser elements, an attachment over
    ``max_attachment_bytes``, browser elements over ``max_browser_chars``.
    """
    limits = limits or InputLimits()
    if valid:
        cap = max(0, min(limits.max_attachments, 3))
        elements = max(0, min(limits.max_browser_elements, 3))
        small = attachments().filter(lambda a: a.size <= limits.max_attachment_bytes)
        options = [
            st.builds(
                UserInput,
                text=st.text(max_size=min(40, limits.max_text_chars)).filter(str.strip),
                sender=_ids,
            )
        ]
        if cap:
            options.append(
                st.builds(
                    UserInput,
                    text=st.just(""),
                    sender=_ids,
                    attachments=st.lists(small, min_size=1, max_size=cap),
                )
            )
        if elements:
            options.append(
                st.builds(
                    UserInput,
                    text=st.text(max_size=min(40, limits.max_text_chars)),
                    sender=_ids,
                    browser_elements=st.lists(
                        browser_elements(), min_size=1, max_size=elements
                    ).filter(lambda els: sum(e.size for e in els) <= limits.max_browser_chars),
                )
            )
        return st.one_of(options)
    big = limits.max_attachment_bytes + 1
    return st.one_of(
        st.builds(UserInput, text=st.sampled_from(["", " ", "\n\t"]), sender=_ids),
        st.builds(UserInput, text=st.just("x"), sender=st.just("")),
        st.builds(UserInput, text=st.just("x" * (limits.max_text_chars + 1)), sender=_ids),
        st.builds(
            UserInput,
            text=st.just("x"),
            sender=_ids,
            browser_elements=st.lists(
                browser_elements(),
                min_size=limits.max_browser_elements + 1,
                max_size=limits.max_browser_elements + 3,
            ),
        ),
        st.builds(
            UserInput,
            text=st.just("x"),
            sender=_ids,
            attachments=st.lists(
                attachments(),
                min_size=limits.max_attachments + 1,
                max_size=limits.max_attachments + 2,
            ),
        ),
        st.builds(
            UserInput,
            text=st.just("x"),
            sender=_ids,
            attachments=attachments().map(lambda a: attrs.evolve(a, size=big)).map(lambda a: [a]),
        ),
        st.builds(
            UserInput,
            text=st.just("x"),
            sender=_ids,
            browser_elements=st.builds(
                BrowserElement,
                url=st.just("https://example.com/"),
                text=st.just("y" * (limits.max_browser_chars + 1)),
            ).map(lambda e: [e]),
        ),
    )


@st.composite
def messages(draw: st.DrawFn, category: Category | None = None, session_id: str = "s") -> Message:
    """Messages of any stored category (or of ``category``), in their initial status."""
    if category is None:
        category = draw(st.sampled_from([c for c in Category if c.spec.stored]))
    fields: dict[str, Any] = {}
    if category is Category.TOOL_CALL:
        fields["tool_call"] = draw(tool_calls())
    if category is Category.TOOL_RESULT:
        fields["tool_call_id"] = draw(_ids)
        fields["is_error"] = draw(st.booleans())
        if fields["is_error"]:
            fields["error_type"] = draw(st.sampled_from(["timeout", "ValueError"]))
    if category is Category.USER_QUESTION:
        fields["attachments"] = draw(st.lists(attachments(), max_size=2))
        fields["browser_elements"] = draw(st.lists(browser_elements(), max_size=2))
    sender = None
    if category in (Category.USER_QUESTION, Category.TOOL_RESULT):
        sender = draw(_ids.filter(lambda s: s != "Notification"))
    if category is Category.TOOL_CALL:
        call = fields["tool_call"]
        content = tool_call_text(call.name, _shown(call))
    else:
        content = draw(
            _content(
                category,
                blank=bool(fields.get("attachments")) or bool(fields.get("browser_elements")),
            )
        )
    return new_message(
        category,
        id=f"msg_{draw(_ids)}",
        session_id=session_id,
        created_at=draw(_times),
        content=content,
        sender=sender,
        metadata=draw(
            _json_objects().map(lambda d: {k: v for k, v in d.items() if not k.startswith("is_")})
        ),
        chatbot_id=draw(st.sampled_from(["cli", "discord", "wechat"])),
        channel_id=draw(_ids),
        parent_id=draw(st.none() | _ids),
        turn_id=None if category.is_input else draw(st.none() | _ids),
        event_seq=draw(st.none() | st.integers(min_value=1, max_value=10**6)),
        **fields,
    )


def _shown(call: ToolCall) -> str:
    """A call's message content, as the runtime writes it."""
    return tool_call_text(
        call.name, orjson.dumps(thaw(call.arguments), option=orjson.OPT_INDENT_2).decode()
    )


def _content(category: Category, *, blank: bool = False) -> st.SearchStrategy[str]:
    """Content a runtime stores for a ``category`` message: not blank, except a tool's
    result, or with ``blank`` (a question with something attached, a signed thought)."""
    return _texts if blank or category is Category.TOOL_RESULT else _words


def events(session_id: str = "s") -> st.SearchStrategy[Event]:
    """Single events of every kind with random fields (not necessarily applicable)."""
    common = {
        "session_id": st.just(session_id),
        "seq": st.integers(min_value=1, max_value=10**9),
        "at": _times,
    }
    statuses = st.sampled_from(list(Status))
    return st.one_of(
        st.builds(MessageAdded, message=messages(session_id=session_id), **common),
        st.builds(StatusChanged, message_id=_ids, expected=statuses, status=statuses, **common),
        st.builds(MetadataUpdated, message_id=_ids, metadata=_json_objects(), **common),
        st.builds(TurnStarted, turn_id=_ids, **common),
        st.builds(
            TurnEnded,
            turn_id=_ids,
            outcome=st.sampled_from(list(TurnOutcome)),
            reason=st.none() | _texts,
            metrics=_json_objects(),
            duration_ms=st.none() | st.floats(min_value=0, max_value=1e9),
            partial=st.lists(messages(Category.REPLY, session_id=session_id), max_size=2),
            notice=st.none() | messages(Category.CRASH_NOTICE, session_id=session_id),
            **common,
        ),
        st.builds(
            OrphanRecovered,
            turn_id=_ids,
            reason=st.none() | _texts,
            calls_interrupted=st.booleans(),
            **common,
        ),
        st.builds(
            RolledBack,
            to_seq=st.integers(min_value=0, max_value=10**6),
            reason=st.none() | _texts,
            **common,
        ),
    )


@st.composite
def session_events(
    draw: st.DrawFn, session_id: str = "s", max_steps: int = 40, *, rich: bool = False
) -> list[Event]:
    """A legal event log of one session, built by construction.

    Inputs arrive (also mid-turn), turns start, think, call tools, get results,
    reply, deliver, and end processed, interrupted or in error, or die and are
    recovered; now and then a finished stretch is rolled back.

    With ``rich=True`` every stored category shows up, for projection tests:
    inputs carry attachments (images and files, no sha256) and browser
    elements; compaction requests, notifications (inside and outside turns),
    nudges, crash notices and replies outside any turn are added; thoughts may
    carry a ``signature``; results may be errors with a type or be long; turns
    may leave partial thoughts as well as partial replies.
    """
    state = SessionState.empty(session_id)
    log: list[Event] = []
    counter = 0
    clock = EPOCH

    def emit(make: Any) -> None:
        nonlocal state, clock, counter
        clock += timedelta(seconds=draw(st.integers(min_value=0, max_value=400)))
        event = make(session_id=session_id, seq=state.seq + 1, at=clock)
        state = apply(state, event)
        log.append(event)

    def fresh(prefix: str) -> str:
        nonlocal counter
        counter += 1
        return f"{prefix}_{counter}"

    for _ in range(draw(st.integers(min_value=1, max_value=max_steps))):
        turn = state.active_turn
        options = ["input"]
        if turn is None and state.queued:
            options.append("start")
        if turn is not None:
            options += ["thought", "call", "reply", "end", "end", "recover"]
            if turn.open_calls:
                options += ["result", "result"]
        undelivered = [
            m for m in state.messages
            if m.active and m.status in (Status.PENDING, Status.RESPONDED)
            and category_needs_delivery(m)
        ]  # fmt: skip
        if undelivered:
            options.append("deliver")
        if turn is None and state.seq > 0 and not state.queued:
            options.append("rollback")
        if rich:
            options += ["notify", "aside"]
            if turn is not None:
                options += ["nudge", "crash"]
        action = draw(st.sampled_from(options))
        base: dict[str, Any] = {"session_id": session_id, "created_at": clock}
        turn_id = turn.id if turn else None
        if action == "input":
            inputs = [
                Category.USER_QUESTION,
                Category.USER_QUESTION,
                Category.CRON_PROMPT,
                Category.BACKGROUND_ALERT,
            ]
            if rich:
                inputs.append(Category.COMPACTION_REQUEST)
            category = draw(st.sampled_from(inputs))
            sender = "Chii" if category is Category.USER_QUESTION else None
            extra: dict[str, Any] = {}
            if rich and category is Category.USER_QUESTION:
                extra["attachments"] = draw(st.lists(_session_attachments(fresh), max_size=2))
                extra["browser_elements"] = draw(st.lists(browser_elements(), max_size=2))
            attached = bool(extra.get("attachments") or extra.get("browser_elements"))
            message = new_message(
                category, id=fresh("msg_in"), content=draw(_content(category, blank=attached)),
                sender=sender, **base, **extra,
            )  # fmt: skip
            emit(lambda message=message, **kw: MessageAdded(message=message, **kw))
        elif action == "start":
            emit(lambda **kw: TurnStarted(turn_id=fresh("turn"), **kw))
        elif action == "thought":
            signed = rich and draw(st.booleans())
            message = new_message(
                Category.THOUGHT, id=fresh("msg_th"), content=draw(_content(
                    Category.THOUGHT, blank=signed)), turn_id=turn_id,
                metadata={"signature": f"sig_{counter}"} if signed else None, **base,
            )  # fmt: skip
            emit(lambda message=message, **kw: MessageAdded(message=message, **kw))
        elif action == "call":
            call = ToolCall(
                id=fresh("call"),
                name=draw(st.sampled_from(["sh", "search"])),
                arguments={"q": draw(_texts)},
            )
            message = new_message(
                Category.TOOL_CALL, id=fresh("msg_call"), tool_call=call, turn_id=turn_id,
                content=tool_call_text(call.name, _shown(call)), **base,
            )  # fmt: skip
            emit(lambda message=message, **kw: MessageAdded(message=message, **kw))
        elif action == "result":
            assert turn is not None
            call_id = draw(st.sampled_from(sorted(turn.open_calls)))
            is_error = draw(st.booleans())
            content = draw(_texts)
            if rich and draw(st.booleans()):
                content = content * draw(st.integers(min_value=1, max_value=200))
            message = new_message(
                Category.TOOL_RESULT, id=fresh("msg_res"), tool_call_id=call_id, sender="sh",
                parent_id=turn.open_calls[call_id], turn_id=turn_id, content=content,
                is_error=is_error,
                error_type=draw(st.none() | st.just("timeout")) if rich and is_error else None,
                **base,
            )  # fmt: skip
            emit(lambda message=message, **kw: MessageAdded(message=message, **kw))
        elif action == "reply":
            message = new_message(
                Category.REPLY, id=fresh("msg_reply"), content=draw(_words), turn_id=turn_id, **base
            )
            emit(lambda message=message, **kw: MessageAdded(message=message, **kw))
        elif action == "deliver":
            target = draw(st.sampled_from(undelivered))
            emit(
                lambda target=target, **kw: StatusChanged(
                    message_id=target.id, expected=target.status, status=Status.DELIVERED, **kw
                )
            )
        elif action == "end":
            assert turn is not None
            outcomes = list(TurnOutcome)
            if turn.open_calls:  # a processed turn has answered all its calls
                outcomes.remove(TurnOutcome.PROCESSED)
            outcome = draw(st.sampled_from(outcomes))
            partial = []
            if outcome is not TurnOutcome.PROCESSED and draw(st.booleans()):
                partial.append(
                    new_message(
                        Category.REPLY,
                        id=fresh("msg_part"),
                        content=draw(_words),
                        turn_id=turn_id,
                        **base,
                    )
                )
            if rich and outcome is not TurnOutcome.PROCESSED and draw(st.booleans()):
                partial.insert(
                    0,
                    new_message(
                        Category.THOUGHT,
                        id=fresh("msg_part"),
                        content=draw(_words),
                        turn_id=turn_id,
                        **base,
                    ),
                )
            notice = None
            if outcome is not TurnOutcome.PROCESSED and draw(st.booleans()):
                notice = new_message(
                    Category.CRASH_NOTICE,
                    id=fresh("msg_notice"),
                    content=draw(_words),
                    turn_id=turn_id,
                    **base,
                )
            emit(
                lambda outcome=outcome, partial=partial, notice=notice, tid=turn.id, **kw: (
                    TurnEnded(turn_id=tid, outcome=outcome, partial=partial, notice=notice, **kw)
                )
            )
        elif action == "recover":
            assert turn is not None
            cut = draw(st.booleans())  # False: a log from before calls_interrupted
            emit(
                lambda tid=turn.id, cut=cut, **kw: OrphanRecovered(
                    turn_id=tid, reason="runner died", calls_interrupted=cut, **kw
                )
            )
        elif action in ("notify", "aside", "nudge", "crash"):
            category = {
                "notify": Category.NOTIFICATION,
                "aside": Category.REPLY,
                "nudge": Category.NUDGE,
                "crash": Category.CRASH_NOTICE,
            }[action]
            in_turn = action in ("nudge", "crash") or (turn_id is not None and draw(st.booleans()))
            message = new_message(
                category, id=fresh("msg_" + action), content=draw(_words),
                turn_id=turn_id if in_turn else None, **base,
            )  # fmt: skip
            emit(lambda message=message, **kw: MessageAdded(message=message, **kw))
        elif action == "rollback":
            to_seq = draw(st.integers(min_value=0, max_value=state.seq - 1))
            probe = RolledBack(session_id=session_id, seq=state.seq + 1, at=clock, to_seq=to_seq)
            try:
                apply(state, probe)
            except Exception:  # input waiting beyond to_seq: skip this draw
                continue
            emit(lambda to_seq=to_seq, **kw: RolledBack(to_seq=to_seq, **kw))
    return log


def _session_attachments(fresh: Any) -> st.SearchStrategy[Attachment]:
    """Attachments with unique ids and no digest (a test store can serve any bytes)."""
    return st.builds(
        lambda kind, media_type, stem: Attachment(
            id=fresh("att"),
            name=f"{stem}.{media_type.split('/')[1]}",
            kind=kind,
            media_type=media_type,
            size=1024,
        ),
        st.sampled_from(["image", "file"]),
        st.sampled_from(["image/png", "image/jpeg", "image/gif", "image/svg+xml", "text/csv"]),
        _ids,
    )


def category_needs_delivery(message: Message) -> bool:
    """True for messages an adapter marks delivered (all but nudges)."""
    from .._category import category_of

    return category_of(message) is not Category.NUDGE


def timelines(
    session_id: str = "s", max_steps: int = 40, *, rich: bool = False
) -> st.SearchStrategy[Timeline]:
    """Timelines of legal sessions (see ``session_events``)."""
    return session_events(session_id, max_steps, rich=rich).map(
        lambda log: Timeline.start(session_id).extend(log)
    )
