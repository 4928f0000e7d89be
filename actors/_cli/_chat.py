"""``amber chat``: an interactive session on the CLI adapter.

Without ``--model`` the model is a scripted stand-in (no network, no key)
that answers a few commands so that everything the runtime does can be
tried by hand: ``sleep N`` calls a slow tool (press Ctrl-C to interrupt it),
``$ command`` runs a shell command when ``--shell`` allowed it, anything
else is echoed back. ``--model PROVIDER:MODEL`` (``openai:gpt-4.1-mini``,
``anthropic:claude-sonnet-4-6``, ``gemini:gemini-2.5-flash``,
``openai-responses:o4-mini``, ``openai-compatible:NAME --base-url URL``)
talks to a real model with the key from the provider's usual environment
variable.

Ctrl-C while a turn runs interrupts it; a second Ctrl-C (or Ctrl-C at the
prompt twice, or Ctrl-D, or ``/exit``) leaves cleanly: the runtime stops and
every event is on disk. SIGTERM or SIGHUP (the terminal closing) stops the runtime
the same way and exits 0, saying so (``_signals``); so does ``amber resume``.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import trio
from rich.console import Console
from rich.markup import escape
from rich.text import Text

from runtime import (
    AmberError,
    ModelView,
    Response,
    SessionState,
    ToolCall,
    ToolResultPart,
    TurnStatus,
    call,
    reply,
)
from runtime._article import counted

from .._approving import calls_waiting
from .._cli_adapter import CliAdapter
from .._model import Model
from .._runtime import Runtime
from .._scripted import ScriptedModel
from .._settings import Settings
from .._shell import shell_tool
from .._tools import Tool, tool
from ._app import (
    CliError,
    ExitCode,
    Seconds,
    db_option,
    open_store,
    require_session,
    require_sqlite_file,
    session_argument,
    session_id_option,
)
from ._hints import command_line, quoted
from ._logs import warnings_on
from ._signals import say_stopped, stop_signals
from ._text import in_call_order

__all__ = ["ChatLoop", "chat", "chat_model", "chat_tools", "resume"]

_SLEEP = re.compile(r"^\s*(?:sleep|wait)\s+(\d+(?:\.\d+)?)\s*$", re.IGNORECASE)
_HELP = (
    "I am Amber's scripted stand-in model (no network, no API key). Try:\n\n"
    "- `sleep 5`: I call a slow tool; press **Ctrl-C** to interrupt the turn.\n"
    "- `$ echo hello`: I run a shell command (only when chat started with `--shell`).\n"
    "- anything else: I echo it back.\n\n"
    "Ctrl-C twice, Ctrl-D or `/exit` leaves; `amber timeline` shows what was stored."
)


@tool(timeout=None)
async def wait(seconds: float) -> str:
    """Wait for a number of seconds (a slow tool to interrupt).

    Args:
        seconds: How long to wait.
    """
    await trio.sleep(seconds)
    return f"waited {seconds:g} s"


def chat_tools(*, shell: bool) -> list[Tool]:
    """The chat's tools: ``wait``, and ``run_shell_command`` when ``shell`` (each command
    waits for the person's approval: the chat asks ``approve? [y/N]``)."""
    return [wait, shell_tool(approval=True)] if shell else [wait]


def _last_input(view: ModelView) -> str:
    for message in reversed(view.messages):
        if message.role.value == "user" and message.source_id is not None:
            return message.text
    return ""


def _last_result(view: ModelView) -> ToolResultPart | None:
    """The last tool result since the last input (None if the input is not answered yet)."""
    for message in reversed(view.messages):
        if message.role.value == "user" and message.source_id is not None:
            return None
        for part in message.parts:
            if isinstance(part, ToolResultPart):
                return part
    return None


def chat_model(*, shell: bool) -> ScriptedModel:
    """The scripted stand-in: a function of each request (see the module docstring)."""

    def answer(request: object) -> Response:
        from runtime import ModelRequest

        assert isinstance(request, ModelRequest)
        # A result since the last input: answer it. Not the call's index in the turn: a
        # turn resumed by another runtime (after an approval) starts again at index 0.
        result = _last_result(request.view)
        if result is not None:
            lines = [
                line
                for line in result.text.splitlines()
                if line.strip() and not (line.startswith("===") and line.endswith("==="))
            ]
            summary = lines[-1] if lines else "(no output)"
            verdict = "It failed" if result.is_error else "Done"
            return reply(f"{verdict}: `{summary[:200]}`")
        if request.call_index > 0:
            return reply("Done.")
        text = _last_input(request.view).strip()
        if match := _SLEEP.match(text):
            return call("wait", {"seconds": float(match.group(1))}, reasoning="A slow tool, then.")
        if text.startswith("$"):
            command = text[1:].strip()
            if not shell:
                return reply("The shell tool is off: start `amber chat --shell` to let me run it.")
            return call("run_shell_command", {"command": command})
        if text.lower() in ("help", "?", "/help"):
            return reply(_HELP)
        return reply(f"You said: {text}\n\n*(scripted model; type `help` for what it can do)*")

    return ScriptedModel(answer)


class ChatLoop:
    """The read-send-wait loop, with Ctrl-C handling; ``read`` is ``input`` in real use.

    A Ctrl-C (``KeyboardInterrupt``) may land anywhere in the loop: while a
    turn runs it interrupts the turn, at the prompt it warns; either way the
    loop is then *armed*, and the next Ctrl-C leaves. Typing a line disarms it.
    """

    def __init__(
        self, rt: Runtime, session: str, console: Console, read: Callable[[str], str]
    ) -> None:
        self.rt = rt
        self.session = session
        self.console = console
        self.read = read
        self.armed = False
        """True after one Ctrl-C: the next one leaves."""
        self.busy = False
        """True while a turn for the last line may be running."""

    def run(self) -> None:
        """Loop until Ctrl-D, ``/exit`` or a second Ctrl-C."""
        while True:
            try:
                if not self.step():
                    return
            except EOFError:
                self.console.print()
                return
            except KeyboardInterrupt:
                if self.armed:
                    self.console.print()
                    return
                self.armed = True
                if self.busy:
                    self.rt.interrupt(self.session, "interrupted by Ctrl-C")
                    notice = Text("⏹ interrupted (Ctrl-C again to leave)", style="dark_orange")
                else:
                    notice = Text("\n(Ctrl-C again, Ctrl-D or /exit to leave)", style="dim")
                self.console.print(notice)

    def step(self) -> bool:
        """Wait for the running turn (asking about tool calls that need approval), or read a
        line and send it; False to leave."""
        if self.busy:
            state = self.rt.wait_idle(self.session, timeout=None)
            turn = state.active_turn
            if turn is None or not turn.awaiting_approval:
                self.busy = False
                self.show_failure(state)
                return True
            for call_id, message in calls_waiting(state):  # in the order the model called
                self.ask_approval(call_id, message)
            return True
        text = self.read("you> ")
        if text.strip() in ("/exit", "/quit"):
            return False
        if text.strip():
            self.armed = False
            self.busy = True
            self.rt.send(self.session, text, sender="you", chatbot_id="cli", channel_id="chat")
        return True

    def show_failure(self, state: SessionState) -> None:
        """Under a failed turn's short crash notice, the detail a person can act on (the
        provider's message, the missing key, the window setting to lower)."""
        turns = state.turn_list()
        last = turns[-1] if turns else None
        if last is not None and last.status is TurnStatus.ERROR and last.reason:
            self.console.print(Text(f"  {last.reason}", style="dim red"), soft_wrap=True)

    def ask_approval(self, call_id: str, message: Any) -> None:
        """Ask the person about one tool call; approve on y/yes, deny otherwise."""
        call = message.tool_call
        shown = ", ".join(f"{k}={v!r}" for k, v in dict(call.arguments).items()) if call else ""
        name = call.name if call else "a tool"
        answer = self.read(escape(f"approve {name}({shown})? [y/N] ")).strip().lower()
        if answer in ("y", "yes"):
            self.rt.approve(self.session, call_id, by="you")
        else:
            self.rt.deny(self.session, call_id, "the user said no", by="you")


def provider_model(spec: str, base_url: str | None) -> Model:
    """The provider model ``spec`` names, or a one-line CLI error saying what is missing."""
    from ..providers import model_from_spec

    try:
        return model_from_spec(spec, base_url=base_url)
    except (AmberError, ImportError) as exc:
        raise CliError(str(exc), ExitCode.USAGE) from None


def chat_settings(system: str | None, prices: str | None) -> Settings:
    """Chat's settings: the system prompt and the price table (shipped, or --prices FILE)."""
    from ..providers import default_prices, load_prices

    try:
        table = default_prices() if prices is None else default_prices().merged(load_prices(prices))
    except AmberError as exc:
        raise CliError(str(exc), ExitCode.USAGE) from None
    return Settings(system_prompt=system, prices=table)


@click.command()
@click.option(
    "--session",
    "session_id",
    callback=session_id_option,
    help="Continue this session (default: a new one).",
)
@click.option(
    "--model",
    "model_spec",
    metavar="PROVIDER:MODEL",
    help="A real model: openai:gpt-4.1-mini, anthropic:claude-sonnet-4-6, gemini:gemini-2.5-flash, "
    "openai-responses:o4-mini, openai-compatible:NAME (with --base-url). Default: the scripted "
    "stand-in.",
)
@click.option("--base-url", help="The API endpoint (an OpenAI-compatible server, a proxy).")
@click.option("--system", "system_prompt", help="The system prompt.")
@click.option("--prices", type=click.Path(dir_okay=False), help="A JSON price table to use.")
@click.option("--shell", is_flag=True, help="Let the model run shell commands ($ command).")
@click.option("--stream/--no-stream", default=True, help="Print replies as they stream.")
@db_option(create=True)
def chat(
    session_id: str | None,
    model_spec: str | None,
    base_url: str | None,
    system_prompt: str | None,
    prices: str | None,
    shell: bool,
    stream: bool,
    db: str,
) -> None:
    """Chat with an agent; Ctrl-C interrupts the running turn.

    Every turn is stored in --db.
    Ctrl-C interrupts the running turn; a second Ctrl-C leaves cleanly.
    Without --model the model is a scripted stand-in (type 'help'); with
    --model PROVIDER:MODEL it is a real one, its key read from the provider's
    environment variable (OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY or
    GOOGLE_API_KEY).
    """
    require_sqlite_file(db, "chat")
    if base_url is not None and model_spec is None:
        raise CliError("--base-url needs --model PROVIDER:MODEL.", ExitCode.USAGE)
    model = provider_model(model_spec, base_url) if model_spec else chat_model(shell=shell)
    settings = chat_settings(system_prompt, prices)
    with open_store(db, create=True) as store:
        if session_id is None:
            session_id, number = "chat", 1
            while session_id in store:
                number += 1
                session_id = f"chat-{number}"
            existing, waiting = 0, False
        else:
            head = store.load_state(session_id) if session_id in store else None
            existing = len(head) if head is not None else 0
            # A session continued on purpose (a pending fork, a crashed turn) is
            # answered first, before the prompt.
            waiting = head is not None and (head.active_turn_id is not None or bool(head.queued))
    with contextlib.suppress(ImportError):
        import readline  # noqa: F401  (line editing and history for input())
    console = Console(highlight=False, markup=False)
    with stop_signals() as stop:
        # Only this session is drawn and resumed: other sessions in the store (a pending
        # fork, say) are never answered by a chat that did not ask for them.
        with stop.sparing_threads():
            adapter = CliAdapter.start(
                console=console, echo_inputs=False, stream=stream, sessions=[session_id]
            )
        note = f"continuing, {counted(existing, 'message')}" if existing else "new"
        about = (
            f"model {getattr(model, 'name', model_spec)}"
            if model_spec
            else "'help' for what the scripted model does"
        )
        console.print(
            Text.assemble(
                ("amber chat", "bold"),
                f" · session {session_id} ({note}) in {db} · {about}",
                style="dim",
            ),
            soft_wrap=True,
        )
        runtime = Runtime(
            model=model,
            store=Path(db),
            tools=chat_tools(shell=shell),
            adapters=[adapter],
            settings=settings,
            resume=[session_id],
        )
        try:
            # A second Ctrl-C while the first is being handled: leave all the same.
            with (
                warnings_on(console),
                stop.guarded(runtime) as rt,
                contextlib.suppress(KeyboardInterrupt),
            ):
                loop = ChatLoop(rt, session_id, console, console.input)
                loop.busy = waiting
                loop.run()
        except KeyboardInterrupt:
            raise CliError(
                "Interrupted while stopping the runtime.", ExitCode.INTERRUPTED
            ) from None
    if stop.received is not None:
        again = command_line(
            "chat",
            options=("--session", session_id, *_same(model_spec, base_url, shell), "--db", db),
        )
        say_stopped("chat", stop, f"Continue: {again}")
        return
    timeline = command_line("timeline", session_id, options=("--db", db))
    bye = Text(f"Bye. Stored in {db}: {timeline}", style="dim")
    console.print(bye, soft_wrap=True)


@click.command()
@click.argument("session", callback=session_argument)
@click.option(
    "--model",
    "model_spec",
    metavar="PROVIDER:MODEL",
    help="A real model (as for amber chat). Default: the scripted stand-in.",
)
@click.option("--base-url", help="The API endpoint (an OpenAI-compatible server, a proxy).")
@click.option("--system", "system_prompt", help="The system prompt.")
@click.option("--prices", type=click.Path(dir_okay=False), help="A JSON price table to use.")
@click.option("--shell", is_flag=True, help="Let the model run shell commands ($ command).")
@click.option("--timeout", type=Seconds(0, above_minimum=True), default=300.0,
              show_default=True, help="Seconds to wait for the session to go idle.")  # fmt: skip
@db_option()
def resume(
    session: str,
    model_spec: str | None,
    base_url: str | None,
    system_prompt: str | None,
    prices: str | None,
    shell: bool,
    timeout: float,
    db: str,
) -> None:
    """Continue SESSION on purpose: answer the input it has waiting, then stop.

    A pending fork, a session whose turn a stopped or crashed runtime left
    active, a reply not yet delivered: this runtime resumes SESSION and no
    other (no command but resume and chat --session touches a session it was
    not given). The model is the chat's scripted stand-in, or the real one
    --model names (as for amber chat).
    """
    from runtime import Status

    require_sqlite_file(db, "resume")
    if base_url is not None and model_spec is None:
        raise CliError("--base-url needs --model PROVIDER:MODEL.", ExitCode.USAGE)
    model = provider_model(model_spec, base_url) if model_spec else chat_model(shell=shell)
    settings = chat_settings(system_prompt, prices)

    with open_store(db) as store:
        require_session(store, session, db)  # NOT_FOUND, with the closest ids
        require = store.load_state(session)
    waiting = [m for m in require if m.status is Status.PENDING_AGENT]
    active = require.active_turn_id
    tools = chat_tools(shell=shell)
    asked = _awaiting_calls(require)
    _require_tools(session, asked, tools, db)
    console = Console(highlight=False, markup=False)
    if not waiting and active is None:
        console.print(
            f"Nothing to resume: {session} has no input waiting and no turn left active.",
            soft_wrap=True,
        )
        return
    what = [f"{len(waiting)} input(s) waiting"] if waiting else []
    if active is not None and asked:
        what.append(f"turn {active} waits for approval of {len(asked)} tool call(s)")
    elif active is not None:
        what.append(f"turn {active} left active (recovered first)")
    console.print(Text(f"Resuming {session}: {', '.join(what)}.", style="dim"), soft_wrap=True)
    for message in waiting:
        console.print(Text(f"  {message.sender}> {message.content}"), soft_wrap=True)
    with stop_signals() as stop:
        with stop.sparing_threads():
            adapter = CliAdapter.start(console=console, echo_inputs=False, sessions=[session])
        runtime = Runtime(
            model=model,
            store=Path(db),
            tools=tools,
            adapters=[adapter],
            settings=settings,
            resume=[session],
        )
        with warnings_on(console), stop.guarded(runtime) as rt:
            loop = ChatLoop(rt, session, console, console.input)
            state = rt.wait_idle(session, timeout=timeout)
            # A turn that waits for approval is idle to the runtime: ask the person here, as
            # the chat does, until the session is idle with nothing left to approve.
            while (turn := state.active_turn) is not None and turn.awaiting_approval:
                try:
                    for call_id, message in calls_waiting(state):
                        loop.ask_approval(call_id, message)
                except EOFError:
                    raise CliError(
                        _unanswered(state, session, shell, db), ExitCode.FAILED
                    ) from None
                state = rt.wait_idle(session, timeout=timeout)
    if stop.received is not None:
        again = command_line(
            "resume", session, options=(*_same(model_spec, base_url, shell), "--db", db)
        )
        say_stopped("resume", stop, f"{session} may have input left: {again} goes on.")
        return
    console.print(
        Text(f"{session} is idle at seq {state.seq}: "
             + command_line("timeline", session, options=("--db", db)), style="dim"),
        soft_wrap=True,
    )  # fmt: skip


def _same(model_spec: str | None, base_url: str | None, shell: bool) -> list[str]:
    """The options that run a session again with the same model and tools."""
    model = ["--model", model_spec] if model_spec else []
    return [
        *model,
        *(["--base-url", base_url] if base_url else []),
        *(["--shell"] if shell else []),
    ]


def _awaiting_calls(state: SessionState) -> list[ToolCall]:
    """The tool calls the state's active turn waits to have approved."""
    turn = state.active_turn
    if turn is None:
        return []
    waiting = in_call_order(state, turn.awaiting_approval)
    calls = (state.message(message_id).tool_call for _, message_id in waiting)
    return [c for c in calls if c is not None]


def _require_tools(session: str, asked: list[ToolCall], tools: list[Tool], db: str) -> None:
    """``USAGE`` if a call waiting for approval names a tool this runtime would not have."""
    names = {t.name for t in tools}
    for call_ in asked:
        if call_.name in names:
            continue
        if call_.name == shell_tool().name:
            again = command_line("resume", session, options=("--shell", "--db", db))
            how = f"run it again with --shell: {again}"
            have = "a tool this resume has only with --shell"
        else:
            how = (
                "answer it from your program, with a runtime that has that tool "
                f"(Runtime(..., resume=[{session!r}]), then rt.approve or rt.deny)"
            )
            have = "a tool amber resume does not have (it has the chat's wait and shell tools)"
        raise CliError(
            f"Session {session!r} waits for approval of a call to {call_.name}, {have}: {how}.",
            ExitCode.USAGE,
        )


def _unanswered(state: SessionState, session: str, shell: bool, db: str) -> str:
    """What to do about calls still waiting for approval when no answer could be read."""
    names = ", ".join(c.name for c in _awaiting_calls(state)) or "a tool call"
    again = command_line("resume", session, options=(*(["--shell"] if shell else []), "--db", db))
    return (
        f"Session {session!r} still waits for approval of {names}, and no answer could be read "
        f"(standard input ended). Run {quoted(again)} in a terminal and answer y (approve) or n "
        "(deny); the call waits until then."
    )
