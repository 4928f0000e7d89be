"""``amber --version`` and ``amber --help`` start fast: they import nothing heavy."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import click
import pytest

from actors._cli import COMMANDS, cli, quick_exit

HEAVY = ("trio", "pykka", "pydantic", "rich", "textual", "openai", "anthropic", "google", "runtime")
"""Packages ``--version`` and ``--help`` must not import (the SDKs, the UI, even the core)."""

_PROBE = """
import sys
from actors._cli import main
code = main({argv!r})
heavy = sorted({{name.split(".")[0] for name in sys.modules}} & set({heavy!r}))
print("HEAVY=" + ",".join(heavy))
raise SystemExit(code)
"""


@pytest.mark.parametrize("argv", [["--version"], ["--help"], []])
def test_version_and_help_import_nothing_heavy(argv: list[str]) -> None:
    """In a fresh interpreter, --version, --help and the bare command load none of HEAVY."""
    result = subprocess.run(
        [sys.executable, "-c", _PROBE.format(argv=argv, heavy=HEAVY)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode in (0, 2), result.stderr  # click exits 2 for a bare group
    assert "HEAVY=\n" in result.stdout, result.stdout
    if argv == ["--version"]:
        assert result.stdout.startswith("amber ")


def test_a_command_imports_what_it_uses() -> None:
    """Running one command loads its own module, not every command's (no textual for show)."""
    code = (
        "import sys\n"
        "from actors._cli import main\n"
        "main(['events'])\n"
        "print('LOADED=' + ','.join(sorted(m for m in sys.modules if m.startswith('actors._cli.')"
        " or m.split('.')[0] == 'textual')))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    loaded = result.stdout.rsplit("LOADED=", 1)[1].strip().split(",")
    assert "actors._cli._admin" in loaded
    assert "actors._cli._chat" not in loaded
    assert "actors._cli._web" not in loaded
    assert "textual" not in loaded


@pytest.mark.parametrize("name", list(COMMANDS))
def test_the_command_table_matches_the_commands(name: str) -> None:
    """COMMANDS names each command's module and its summary as the command's help has it, so
    the --help listed from the table is the one the commands would give."""
    command = cli.get_command(click.Context(cli), name)
    assert command is not None
    assert command.name == name
    stub = click.Command(name, help=COMMANDS[name][2])
    for limit in (30, 45, 80, 200):
        assert stub.get_short_help_str(limit) == command.get_short_help_str(limit)


READ_HEAVY = (
    "trio", "pykka", "textual", "pydantic", "hypothesis", "openai", "anthropic", "google",
    "runtime.testing", "runtime._assembly", "runtime._stream", "runtime._providers",
    "runtime._payloads", "runtime._clean", "actors._channels", "actors._runtime", "actors._cli._calls",
    "runtime._chunks", "runtime._diff", "runtime._cost", "runtime.store._check",
    "runtime.store._scan",
)  # fmt: skip
"""What the read-only commands must not import: the runtime's machinery, the SDKs, the UI,
the stream assembler and its chunks, the providers' payloads, the request builders of
``--call``, the state diff, the price tables (for a session without model calls), the
store's checker (``amber check``)."""


def _turns_store(path: Path, exchanges: list[tuple[str, str]]) -> str:
    """A store at ``path`` with one session ``s``: for each (question, reply), a question
    ``u<n>``, turn ``t<n>`` and reply ``a<n>`` (n from 1), each a second after the last."""
    from datetime import UTC, datetime, timedelta

    from runtime import (
        Category,
        Event,
        MessageAdded,
        SessionState,
        TurnEnded,
        TurnOutcome,
        TurnStarted,
        apply,
        new_message,
    )
    from runtime.store import SQLiteStore

    t0 = datetime(2026, 5, 27, 12, 50, tzinfo=UTC)
    makers: list[Callable[..., Event]] = []
    for n, (asked, answered) in enumerate(exchanges, start=1):
        question = new_message(Category.USER_QUESTION, id=f"u{n}", session_id="s",
                               created_at=t0, sender="Chii", content=asked)  # fmt: skip
        reply = new_message(Category.REPLY, id=f"a{n}", session_id="s", created_at=t0,
                            turn_id=f"t{n}", parent_id=f"u{n}", content=answered)  # fmt: skip
        makers += [
            lambda question=question, **kw: MessageAdded(message=question, **kw),
            lambda n=n, **kw: TurnStarted(turn_id=f"t{n}", **kw),
            lambda reply=reply, **kw: MessageAdded(message=reply, **kw),
            lambda n=n, **kw: TurnEnded(turn_id=f"t{n}", outcome=TurnOutcome.PROCESSED, **kw),
        ]
    state = SessionState.empty("s")
    events = []
    for make in makers:
        event = make(session_id="s", seq=state.seq + 1, at=t0 + timedelta(seconds=state.seq))
        state = apply(state, event)
        events.append(event)
    with SQLiteStore(path) as store:
        store.append(events)
    return str(path)


@pytest.fixture(scope="module")
def small_db(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A store with one short session ``s``: a question, a turn, a reply."""
    return _turns_store(tmp_path_factory.mktemp("startup") / "small.db", [("Hi?", "Hello.")])


@pytest.mark.parametrize(
    "argv",
    [
        ["show", "--help"],
        ["timeline", "--help"],
        ["show", "s", "--at", "3", "--json"],
        ["show", "s", "--at", "3"],
        ["timeline", "s"],
        ["timeline", "s", "--json"],
        ["show", "s", "--at", "4", "--json"],
        ["sessions"],
        ["sessions", "--json"],
    ],
)
def test_read_commands_import_nothing_heavy(argv: list[str], small_db: str) -> None:
    """show, timeline and sessions (and their --help) load none of READ_HEAVY, nor cattrs
    nor logging when they read (sessions imported logging, and the recovery's planner, for
    its listing of the damaged sessions); timeline (piped) and timeline --json not rich's
    console, show --json not even rich."""
    if "--help" not in argv:
        argv = [*argv, "--db", small_db]
    code = (
        "import sys\n"
        "from actors._cli import main\n"
        f"code = main({argv!r})\n"
        "print('LOADED=' + ' '.join(sorted(sys.modules)))\n"
        "raise SystemExit(code)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    loaded = set(result.stdout.rsplit("LOADED=", 1)[1].split())
    heavy = {m for m in loaded if m in READ_HEAVY or m.split(".")[0] in READ_HEAVY}
    assert not heavy, sorted(heavy)
    if "--help" not in argv:
        assert "logging" not in loaded  # a sound store warns of nothing (runtime._log)
        assert "cattrs" not in loaded  # the codec's general path: not for the common rows
        assert "runtime._converter" not in loaded
    if "--json" in argv or (argv[0] == "timeline" and "--help" not in argv):
        assert "rich.console" not in loaded  # timeline: piped, its lines are plain text
    if "--json" in argv:
        assert "[" in result.stdout or "{" in result.stdout  # it did print the data
    if argv[0] == "show" and "--json" in argv:
        assert not {m for m in loaded if m.split(".")[0] == "rich"}
        assert "actors._cli._views" not in loaded


@pytest.fixture(scope="module")
def calls_db(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A store with one session ``s`` whose turn calls the model (seqs 3 and 4), as every
    real session does."""
    from datetime import UTC, datetime

    from runtime import (
        AuditStatus,
        Category,
        MessageAdded,
        ModelCallFinished,
        ModelCallStarted,
        SessionState,
        TurnEnded,
        TurnOutcome,
        TurnStarted,
        Usage,
        apply,
        new_message,
    )
    from runtime._audit import AuditCall
    from runtime.store import SQLiteStore

    at = datetime(2026, 5, 27, 12, 50, tzinfo=UTC)
    base = {"session_id": "s", "at": at}
    question = new_message(Category.USER_QUESTION, id="u1", session_id="s", created_at=at,
                           sender="Chii", content="Hi?")  # fmt: skip
    reply = new_message(Category.REPLY, id="a1", session_id="s", created_at=at, turn_id="t1",
                        parent_id="u1", content="Hello.")  # fmt: skip
    events = [
        MessageAdded(seq=1, message=question, **base),
        TurnStarted(seq=2, turn_id="t1", **base),
        ModelCallStarted(seq=3, operation_id="run_1", source_key="t1#0", turn_id="t1",
                         sequence=1, model="scripted", **base),
        ModelCallFinished(seq=4, operation_id="run_1", status=AuditStatus.COMPLETED,
                          duration_ms=3.5, usage=Usage(output_tokens=2), content="Hello.",
                          tool_calls=[AuditCall(id="c1", name="echo", arguments_json="{}")],
                          stop_reason="end_turn", source_key="t1#0", **base),
        MessageAdded(seq=5, message=reply, **base),
        TurnEnded(seq=6, turn_id="t1", outcome=TurnOutcome.PROCESSED, **base),
    ]  # fmt: skip
    state = SessionState.empty("s")
    for event in events:
        state = apply(state, event)
    path = tmp_path_factory.mktemp("startup") / "calls.db"
    with SQLiteStore(path) as store:
        store.append(events)
    return str(path)


@pytest.mark.parametrize(
    "argv",
    [
        ["show", "s", "--at", "3"],
        ["show", "s", "--at", "5"],
        ["show", "s"],
        ["timeline", "s"],
        ["show", "s", "--at", "4", "--json"],
        ["show", "s", "--json"],
        ["timeline", "s", "--json"],
    ],
)
def test_reading_model_calls_does_not_import_cattrs(argv: list[str], calls_db: str) -> None:
    """A session's model calls are read and written without the codec's general path
    (cattrs): the stored start and end of a call decode by their constructors, and their
    data (``--json``: the events, the state's audit rows) comes from their slots; a piped
    show imports no rich.table for its texts, and none of them logging."""
    code = (
        "import sys\n"
        "from actors._cli import main\n"
        f"code = main({[*argv, '--db', calls_db]!r})\n"
        "print('LOADED=' + ' '.join(sorted(sys.modules)))\n"
        "raise SystemExit(code)\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env,
        check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    out, loaded = result.stdout.rsplit("LOADED=", 1)
    assert "run_1" in out, out
    modules = set(loaded.split())
    assert not {"cattrs", "runtime._converter", "rich.table", "logging"} & modules


@pytest.mark.parametrize(
    "argv", [["show", "s", "--at", "3"], ["show", "s"], ["show", "s", "--at", "0", "--all"]]
)
def test_show_piped_does_not_import_the_rich_console(argv: list[str], small_db: str) -> None:
    """Piped, show's state view prints its texts without rich's console (``PlainConsole``),
    nor rich.table for a view without tables; with FORCE_COLOR set it goes through rich as
    before (styled)."""
    code = (
        "import sys\n"
        "from actors._cli import main\n"
        f"code = main({[*argv, '--db', small_db]!r})\n"
        "print('CONSOLE=' + str('rich.console' in sys.modules))\n"
        "print('TABLE=' + str('rich.table' in sys.modules))\n"
        "raise SystemExit(code)\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    runs = [
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            timeout=120,
            env=extra,
            check=True,
        )
        for extra in (env, {**env, "FORCE_COLOR": "1"})
    ]
    plain, styled = (run.stdout.rsplit("CONSOLE=", 1) for run in runs)
    assert plain[1].split() == ["False", "TABLE=False"]  # no table: rich.table not imported
    assert styled[1].split()[0] == "True"
    assert "\x1b[" not in plain[0]
    assert "\x1b[" in styled[0]
    assert plain[0].startswith("s at seq ")


def test_timeline_styles_its_lines_when_forced(small_db: str) -> None:
    """Piped with FORCE_COLOR set, timeline prints through rich as before (styled); piped
    without it, the same text unstyled."""
    import os

    argv = [sys.executable, "-c", "from actors._cli import main; main()", "timeline", "s",
            "--db", small_db]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    plain = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env, check=True)
    styled = subprocess.run(
        argv, capture_output=True, text=True, timeout=120, env={**env, "FORCE_COLOR": "1"},
        check=True,
    )  # fmt: skip
    assert "\x1b[" not in plain.stdout
    assert "\x1b[" in styled.stdout
    assert plain.stdout.splitlines()[0].startswith("s: 4 events, ")
    assert len(plain.stdout.splitlines()) == len(styled.stdout.splitlines()) == 5


def _entry_code(entry: str) -> str:
    """A program that runs ``actors._cli.<entry>`` as a console script does, and prints
    ``ATEXIT`` to stderr if the interpreter exits the usual way."""
    return (
        "import atexit, sys\n"
        "atexit.register(lambda: sys.stderr.write('ATEXIT'))\n"
        f"from actors._cli import {entry}\n"
        f"sys.exit({entry}())\n"
    )


def _script(
    argv: list[str], *, entry: str, stdout: int | None = subprocess.PIPE
) -> tuple[int, str, str]:
    """Run ``argv`` through ``entry`` (the console script's ``console_main``, or ``main`` the
    way a script ran it before) in a fresh interpreter that says whether it exited the usual
    way (an atexit handler prints ``ATEXIT`` to stderr)."""
    result = subprocess.run(
        [sys.executable, "-c", _entry_code(entry), *argv],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
        check=False,
    )
    return result.returncode, result.stdout or "", result.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ["show", "s", "--at", "3"],
        ["show", "s", "--json"],
        ["timeline", "s"],
        ["diff", "s", "1"],
        ["sessions"],
        ["show", "nope"],  # not found: exit 3, the error on stderr
        ["show", "s", "--at", "9"],
    ],
)
def test_console_script_skips_teardown_after_read_commands(argv: list[str], small_db: str) -> None:
    """console_main ends a read-only command without the interpreter's teardown (no atexit
    handler runs), printing what main prints and exiting with its code."""
    argv = [*argv, "--db", small_db]
    code, out, err = _script(argv, entry="console_main")
    main_code, main_out, main_err = _script(argv, entry="main")
    assert (code, out, err) == (main_code, main_out, main_err.removesuffix("ATEXIT"))
    assert main_err.endswith("ATEXIT")


def test_console_script_exits_as_usual_after_other_commands(small_db: str) -> None:
    """Any other command (here ``events``, and ``--version``) exits the usual way."""
    for argv in (["events"], ["--version"]):
        code, out, err = _script(argv, entry="console_main")
        assert (code, err) == (0, "ATEXIT")
        assert out


def test_console_script_on_a_closed_pipe(small_db: str) -> None:
    """Printing to a pipe nobody reads (``amber timeline s | true``) ends as it did before:
    click's exit code for a closed pipe, the same (empty) error output."""
    results: list[tuple[int, str, str]] = []
    for entry in ("console_main", "main"):
        read, write = os.pipe()
        os.close(read)
        try:
            results.append(_script(["timeline", "s", "--db", small_db], entry=entry, stdout=write))
        finally:
            os.close(write)
    (code, _, err), (main_code, _, main_err) = results
    assert (code, err) == (main_code, main_err.removesuffix("ATEXIT")) == (1, "")


@pytest.fixture(scope="module")
def long_db(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A store with one session ``s`` of 3,000 events: its timeline is more than a pipe holds."""
    exchanges = [(f"Question {n}?", f"Answer {n}.") for n in range(750)]
    return _turns_store(tmp_path_factory.mktemp("startup") / "long.db", exchanges)


def test_timeline_read_in_part_then_the_pipe_closed(long_db: str) -> None:
    """``amber timeline s | head -1`` on a long session: exit 1 and nothing on stderr (the
    walk's transaction used to end after the store had closed: "Exception ignored in: <generator
    object TimeTravel.walk>" and a traceback). The timeline is more than a pipe holds, so the
    command is still walking when the reader goes."""
    with subprocess.Popen(
        [sys.executable, "-c", _entry_code("console_main"), "timeline", "s", "--db", long_db],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        assert process.stdout is not None
        assert process.stderr is not None
        assert process.stdout.readline().startswith("s: 3000 events")
        process.stdout.close()  # as head does after its lines
        err = process.stderr.read()
        code = process.wait(timeout=120)
    assert (code, err) == (1, "")


def test_show_on_a_closed_pipe(small_db: str) -> None:
    """Piped to nobody, show ends as it does through rich's console (FORCE_COLOR): exit code
    1, nothing on stderr, whether it prints plain (``PlainConsole``) or through rich."""
    results: list[tuple[int, str]] = []
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    for extra in ({}, {"FORCE_COLOR": "1"}):
        read, write = os.pipe()
        os.close(read)
        try:
            result = subprocess.run(
                [sys.executable, "-c", _entry_code("console_main"), "show", "s", "--db", small_db],
                stdout=write,
                stderr=subprocess.PIPE,
                text=True,
                timeout=120,
                env={**env, **extra},
                check=False,
            )
        finally:
            os.close(write)
        results.append((result.returncode, result.stderr))
    assert results[0] == results[1] == (1, "")


@pytest.mark.parametrize(
    ("argv", "quick"),
    [
        (["show", "s"], True),
        (["-h", "timeline"], True),
        (["diff", "s", "1"], True),
        (["demo"], False),
        (["--version"], False),
        ([], False),
        (["import", "show"], False),
    ],
)
def test_quick_exit_names_the_command(argv: list[str], quick: bool) -> None:
    """quick_exit looks at the command, the first word that is not an option."""
    assert quick_exit(argv) is quick


def test_console_script_without_a_stdout(small_db: str) -> None:
    """Started with no file descriptor 1 (sys.stdout is None), the command ends as main's."""
    argv = [sys.executable, "-c"]
    results = []
    for entry in ("console_main", "main"):
        result = subprocess.run(
            [*argv, _entry_code(entry), "timeline", "s", "--db", small_db],
            stdin=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
            preexec_fn=lambda: os.close(1),
        )
        results.append((result.returncode, result.stderr.removesuffix("ATEXIT")))
    assert results[0] == results[1]
