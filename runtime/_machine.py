"""The turn machine's state: the session's head and the running turn's bookkeeping.

``step(machine, settings, input) -> Decision`` (DESIGN §7, functional core,
imperative shell). ``machine`` is a ``SessionMachine``: the session's head
state plus the bookkeeping of the running turn (which model run is current,
the stream assembled so far, the tool runs in flight, counters); it is a
frozen value, and ``step`` returns the next one inside the decision. What
``step`` decides depends only on its three arguments: time comes in the
input, and ids are derived from the session and its seq
(``msg_3fa1c2b9_000017`` is the message added by the event with seq 17), so
the same inputs give the same events byte for byte in any process.

Only the bookkeeping of the running turn is lost in a crash; the session
state is rebuilt from the stored events, and ``Loaded`` recovers the turn a
dead runner left (DESIGN §9).
"""

from __future__ import annotations

from datetime import datetime

import attrs
from pyrsistent import pmap
from pyrsistent.typing import PMap

from ._artifacts import ArtifactStore
from ._assembly import Assembly
from ._category import AGENT_SENDER
from ._cost import PriceTable
from ._state import SessionState
from ._stream import ToolSpec
from ._view import ModelView
from ._view_cache import ViewCache
from ._window import Window

__all__ = ["SessionMachine", "TurnRun", "TurnSettings"]


@attrs.frozen(kw_only=True)
class TurnSettings:
    """What the turn machine needs to know of a runtime's settings, tools and model."""

    system_prompt: str | None = None
    """The system prompt given to the model on every call."""
    agent_name: str = AGENT_SENDER
    """The ``sender`` of the agent's messages."""
    window: Window | None = None
    """Token and message budget of the model's view (None: all history)."""
    artifacts: ArtifactStore | None = None
    """Where attachment bytes are read from (images for the model)."""
    max_result_chars: int | None = 20_000
    """Tool results longer than this reach the model as head + tail excerpts."""
    max_nudges: int = 2
    """Empty model responses nudged and retried in one turn before it fails."""
    max_model_calls: int = 25
    """Model calls in one turn before it fails (a loop guard)."""
    model_timeout: float | None = 300.0
    """Seconds one model call may take before it fails the turn (None: no limit)."""
    passivate_after: float | None = 300.0
    """Idle seconds before the machine asks to be passivated (None: never)."""
    recover_after: float = 300.0
    """Seconds a turn left active by a runner that may still be alive (on a shared store)
    waits before its input is taken back."""
    tools: tuple[ToolSpec, ...] = ()
    """The tools the model may call."""
    model_name: str | None = None
    """The model's name, recorded in audit rows."""
    prices: PriceTable | None = None
    """Prices to put a cost on each model call (its audit row, the turn's metrics); None:
    costs are not computed."""
    approval_timeout: float | None = None
    """Seconds a tool call may wait for approval before it is denied (None: it waits)."""
    runner: str | None = None
    """This runner's incarnation (one runtime's run), recorded with every turn it starts."""
    exclusive: bool = True
    """True when this runner alone runs the store (a SQLite file a runtime holds, an
    in-memory store): a turn found active on load was left by a runner that is gone and is
    recovered at once. False for a store several runners share: another runner's turn
    waits ``recover_after``."""
    tool_names: frozenset[str] = attrs.field(init=False)
    """Names of ``tools``."""
    approval_tools: frozenset[str] = attrs.field(init=False)
    """Names of the ``tools`` whose calls wait for approval."""

    @tool_names.default
    def _names(self) -> frozenset[str]:
        return frozenset(spec.name for spec in self.tools)

    @approval_tools.default
    def _approval_names(self) -> frozenset[str]:
        return frozenset(spec.name for spec in self.tools if spec.needs_approval)


@attrs.frozen(kw_only=True)
class TurnRun:
    """Bookkeeping of the running turn (never stored; a crash loses it, recovery covers it)."""

    turn_id: str
    """The turn."""
    started_mono: float
    """Monotonic start (turn time is measured from it)."""
    parent_id: str | None
    """The turn's latest input: the parent of its output."""
    chatbot_id: str
    """Platform of that input (where the output goes)."""
    channel_id: str
    """Channel of that input."""
    calls: int = 0
    """Model calls made so far."""
    model_run: str | None = None
    """The model call in flight, if any."""
    model_started: float = 0.0
    """Monotonic start of that call."""
    model_started_at: datetime | None = None
    """Wall clock of the step that called the model (the time its input carried): the start
    of the row of a call cut off before its first chunk."""
    source_key: str = ""
    """Audit key of the current call (``<turn id>#<call index>``)."""
    operation_id: str | None = None
    """Its audit row, once opened."""
    stream_id: str = ""
    """Id of the model message streaming (the provider's, else the run id)."""
    assembly: Assembly | None = None
    """The current call's stream so far."""
    view: ModelView | None = None
    """The view the current (or last) call was sent."""
    tools: PMap[str, float] = attrs.field(factory=pmap)
    """Tool runs in flight: call id -> monotonic start."""
    tool_calls: int = 0
    """Tool calls the model asked for in this turn."""
    tokens: int = 0
    """Tokens the turn's calls used (as reported)."""
    context_tokens: int | None = None
    """Prompt size: from usage, else the window's count, else counted at the end."""
    nudges: int = 0
    """Empty answers nudged so far."""
    cost_usd: float | None = None
    """What the turn's priced calls cost so far (US dollars); None until one is priced."""
    priced: bool = True
    """False once a call of the turn had usage but no known price (``cost_usd`` is then a
    lower bound)."""
    stopping: frozenset[str] | None = None
    """Set while a stop waits for the turn's tool runs (``Stopping.draining``): the runs it
    cancelled (they may have run in part). A result is recorded, and the last one ends the
    turn for the stop instead of calling the model."""


@attrs.frozen(kw_only=True)
class SessionMachine:
    """The turn machine's state: the session's head and the running turn's bookkeeping."""

    state: SessionState
    """The session's head state."""
    run: TurnRun | None = None
    """The running turn, if this runner runs one."""
    idle_armed: int | None = None
    """The seq the idle (passivation) timer was armed at."""
    cancelled: frozenset[str] = frozenset()
    """Inputs whose caller gave up: a turn that claims only such inputs ends interrupted at
    once, without calling the model, and a running one once every input it claims is here."""
    views: ViewCache | None = attrs.field(default=None, eq=False, repr=False)
    """The model's view of the settled history, kept between model calls (a cache: two
    machines that differ only here are equal)."""

    @classmethod
    def load(cls, state: SessionState) -> SessionMachine:
        """A machine for a session loaded from the store (step it with ``Loaded`` next)."""
        return cls(state=state)

    @property
    def session_id(self) -> str:
        """The session."""
        return self.state.session_id

    @property
    def is_idle(self) -> bool:
        """True when no turn runs or waits to be recovered, and no input waits."""
        state = self.state
        return self.run is None and not state.queued and state.active_turn is None

    @property
    def is_waiting(self) -> bool:
        """True when the running turn only waits for a person to approve tool calls (nothing
        in flight, no input waiting)."""
        run, state = self.run, self.state
        turn = state.active_turn
        return (
            run is not None
            and turn is not None
            and bool(turn.awaiting_approval)
            and run.model_run is None
            and not run.tools
            and not state.queued
        )

    @property
    def is_quiet(self) -> bool:
        """Idle, or waiting for approval: nothing runs until someone acts (``wait_idle``
        returns, and the session may be passivated)."""
        return self.is_idle or self.is_waiting
