"""``Step``: one decision being built, with the ids it derives and what it announces.

Each handler of the turn machine gets a ``Step``: ``emit`` builds an event
at the next seq, applies it (so later choices see its effect) and records
which messages it changed, to be announced; ``command`` adds a command. The
ids it makes are derived from the seq of the event that adds the thing
named (``msg_000017``, ``turn_000002``, ``run_000003``), with a ``~2``,
``~3`` … suffix in the rare case the name is taken already (a fork keeps
its source's ids), so they are the same in every process that makes them.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable
from typing import Any

from ._category import Category, new_message
from ._commands import Announce, Command, Decision, SetTimer
from ._events import Event, MessageAdded, OrphanRecovered, StatusChanged, TurnEnded, TurnStarted
from ._inputs import Input
from ._machine import SessionMachine, TurnRun, TurnSettings
from ._message import Message
from ._reducer import apply
from ._replace import replace
from ._state import SessionState, as_own
from ._updates import Update

__all__ = ["IDLE_TIMER", "Step", "free_id", "session_tag"]

IDLE_TIMER = "idle"
"""The passivation timer's name."""


@functools.lru_cache(maxsize=4096)
def session_tag(session_id: str) -> str:
    """Eight hex digits derived from ``session_id`` (its part of every id the machine makes)."""
    data = session_id.encode("utf-8", "surrogatepass")
    return hashlib.blake2b(data, digest_size=4).hexdigest()


def free_id(base: str, taken: Callable[[str], bool]) -> str:
    """``base``, or ``base~2``, ``base~3`` … the first one ``taken`` says is free."""
    if not taken(base):
        return base
    n = 2
    while taken(f"{base}~{n}"):
        n += 1
    return f"{base}~{n}"


class Step:
    """A decision under construction for one input."""

    __slots__ = ("at", "cancelled", "commands", "events", "idle_armed", "input", "mono", "run",
                 "settings", "state", "views")  # fmt: skip

    def __init__(self, machine: SessionMachine, settings: TurnSettings, input: Input) -> None:
        self.settings = settings
        self.input = input
        self.at = input.at
        self.mono = input.mono
        self.state: SessionState = machine.state
        self.run: TurnRun | None = machine.run
        self.idle_armed = machine.idle_armed
        self.cancelled = machine.cancelled
        self.views = machine.views
        self.events: list[Event] = []
        self.commands: list[Command] = []

    @property
    def session_id(self) -> str:
        """The session."""
        return self.state.session_id

    @property
    def next_seq(self) -> int:
        """The seq the next emitted event gets."""
        return self.state.seq + 1

    # -- building -------------------------------------------------------------------

    def emit(self, cls: type[Event], **fields: Any) -> Event:
        """Build the next event, apply it, and queue announcements of what it changed.

        Raises:
            EventRejected: the state refuses it; nothing of it was kept.
        """
        event = cls(session_id=self.state.session_id, seq=self.state.seq + 1, at=self.at, **fields)
        before = self.state
        self.state = apply(before, event)
        self.events.append(event)
        self._announce(before, self.state, event)
        return event

    def command(self, command: Command) -> None:
        """Add a command."""
        self.commands.append(command)

    def decision(self) -> Decision:
        """The decision: arm the idle timer if the session just went idle, then freeze."""
        settings = self.settings
        state = self.state
        machine = SessionMachine(
            state=state,
            run=self.run,
            idle_armed=self.idle_armed,
            cancelled=self.cancelled,
            views=self.views,
        )
        # A turn waiting for approval may be passivated, unless its approval has a time
        # limit: the timer must live to deny it.
        idle = machine.is_idle or (machine.is_waiting and settings.approval_timeout is None)
        if not idle:
            self.idle_armed = None
        elif settings.passivate_after is not None and self.idle_armed != self.state.seq:
            # Armed once per idle seq (and again after it fired): re-arming on every
            # input would let two timers replace each other forever. A turn a dead
            # runner left is not idle: its recovery timer must not be passivated away.
            self.idle_armed = state.seq
            self.commands.append(SetTimer(name=IDLE_TIMER, seconds=settings.passivate_after))
        return Decision(
            events=tuple(self.events),
            commands=tuple(self.commands),
            machine=replace(machine, idle_armed=self.idle_armed),
        )

    # -- ids ----------------------------------------------------------------------------

    def _base(self, prefix: str) -> str:
        state = self.state
        return f"{prefix}_{session_tag(state.session_id)}_{state.seq + 1:06d}"

    def message_id(self, part: int = 0) -> str:
        """Id of the message the next event adds (``part`` > 0: its part-th of several)."""
        base = self._base("msg") + (f"_{part}" if part else "")
        return free_id(base, self.state.index.__contains__)

    def turn_id(self) -> str:
        """Id of the turn the next event starts."""
        state = self.state
        return free_id(self._base("turn"), lambda i: i in state.turns)

    def run_id(self) -> str:
        """Id of a model run whose audit row the next event would open."""
        state = self.state
        return free_id(self._base("run"), lambda i: i in state.audit or i in state.tool_calls)

    def call_id(self, taken: set[str]) -> str:
        """A fresh tool call id for a call the next event adds (one the model reused)."""
        state = self.state
        return free_id(self._base("call"), lambda i: i in state.tool_calls or i in taken)

    def output(self, category: Category, content: str, *, part: int = 0, **fields: Any) -> Message:
        """A message of the running turn, with the id the next event gives it."""
        run = self.run
        assert run is not None
        return new_message(
            category,
            id=self.message_id(part),
            session_id=self.state.session_id,
            created_at=self.at,
            content=content,
            parent_id=fields.pop("parent_id", run.parent_id),
            turn_id=run.turn_id,
            chatbot_id=run.chatbot_id,
            channel_id=run.channel_id,
            sender=fields.pop("sender", self.settings.agent_name),
            **fields,
        )

    # -- announcements -----------------------------------------------------------------

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
                if event.notice is not None:
                    ids.append(event.notice.id)
        else:
            message_id = getattr(event, "message_id", None)
            ids = [message_id] if isinstance(message_id, str) else []
        for message_id in ids:
            new = after.get(message_id)
            if new is None:
                continue
            old = before.get(message_id)
            if old is not None and old is new:
                continue
            self.commands.append(
                Announce(
                    update=Update(
                        session_id=after.session_id,
                        seq=after.seq,
                        message=as_own(after, new),
                        previous=None if old is None else old.status,
                    )
                )
            )
