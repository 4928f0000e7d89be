"""Amber's pytest plugin (entry point ``amber``): fixtures; failing runtimes kept for time travel.

Loaded automatically once ``amber`` is installed; ``-p no:amber`` turns it
off. Importing it imports nothing of Amber: the fixtures import ``actors``
when a test first uses one.

Fixtures:

- ``amber_runtime``: a started ``Runtime`` on a SQLite file in the test's
  temp dir, with ``amber_model``, ``amber_tools``, ``amber_adapters`` and
  ``amber_settings`` (override those fixtures in your ``conftest.py``);
- ``amber_memory_runtime``: the same on an in-memory store;
- ``amber_runtime_factory``: ``make(**kwargs)`` builds more (all stopped at the end);
- ``amber_scripted_model``: ``make(script, fallback=None)`` builds ``ScriptedModel``s.

When a test that used a runtime fixture fails, its sessions are copied to
``.amber-failures/<test>-<n>.db`` (``--amber-failures DIR`` or the
``amber_failures`` ini option to change it) and the report says how to open
them with ``amber inspect``. ``LifecycleMachine`` examples do the same.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

FAILURES_ENV = "AMBER_FAILURES_DIR"
_RUNTIME_FIXTURES = ("amber_runtime", "amber_memory_runtime")


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--amber-failures DIR`` and the ``amber_failures`` ini option."""
    group = parser.getgroup("amber", "Amber runtimes and lifecycle tests")
    group.addoption(
        "--amber-failures",
        dest="amber_failures",
        default=None,
        help="where the sessions of failing tests are saved (default: .amber-failures)",
    )
    parser.addini(
        "amber_failures", "where the sessions of failing tests are saved", default=".amber-failures"
    )


def pytest_configure(config: pytest.Config) -> None:
    """Point ``$AMBER_FAILURES_DIR`` at the chosen folder.

    ``--amber-failures`` wins, then an ``$AMBER_FAILURES_DIR`` already set,
    then the ``amber_failures`` ini option (relative to the rootdir).
    """
    option = config.getoption("amber_failures")
    if option is None and os.environ.get(FAILURES_ENV):
        return
    folder = Path(option or config.getini("amber_failures"))
    if not folder.is_absolute():
        folder = (Path.cwd() if option else config.rootpath) / folder
    os.environ[FAILURES_ENV] = str(folder)


def pytest_report_header(config: pytest.Config) -> str:
    """One header line: where failing sessions go."""
    return f"amber: failing sessions are saved in {os.environ.get(FAILURES_ENV)}"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Save the sessions of a failing test's runtimes; add the ``amber inspect`` lines."""
    report = yield
    if call.when == "call" and report.failed:
        funcargs = getattr(item, "funcargs", {})
        for name in _RUNTIME_FIXTURES:
            runtime = funcargs.get(name)
            if runtime is not None:
                lines = _save(runtime, item.name)
                if lines:
                    report.sections.append((f"amber: {name}", "\n".join(lines)))
    return report


def _save(runtime: Any, test_name: str) -> list[str]:
    from runtime.testing import failure_path, inspect_commands, save_sessions

    if not runtime.running:
        return []
    sessions = [info.session_id for info in runtime.sessions()]
    if not sessions:
        return []
    path = failure_path(test_name)
    saved = runtime.call_store(lambda store: save_sessions(store, sessions, path))
    return [f"sessions saved in {path}; time-travel with:"] + [
        f"    {command}" for command in inspect_commands(saved, path)
    ]


@pytest.fixture
def amber_model() -> Any:
    """The model of ``amber_runtime``: a ``ScriptedModel`` that answers ``ok`` (override it)."""
    from actors import ScriptedModel, reply

    return ScriptedModel([], fallback=reply("ok"))


@pytest.fixture
def amber_tools() -> list[Any]:
    """The tools of ``amber_runtime`` (none; override it)."""
    return []


@pytest.fixture
def amber_adapters() -> list[Any]:
    """The started adapters of ``amber_runtime`` (none; override it). The runtime stops them."""
    return []


@pytest.fixture
def amber_settings() -> Any:
    """The ``Settings`` of ``amber_runtime``: no passivation (override it)."""
    from actors import Settings

    return Settings(passivate_after=None)


@pytest.fixture
def amber_runtime_factory(
    tmp_path: Path, amber_model: Any, amber_tools: list[Any], amber_settings: Any
) -> Iterator[Callable[..., Any]]:
    """``make(**kwargs)``: a started ``Runtime`` (SQLite in the temp dir unless ``store=``)."""
    from actors import Runtime

    made: list[Any] = []

    def make(**kwargs: Any) -> Any:
        kwargs.setdefault("model", amber_model)
        kwargs.setdefault("tools", amber_tools)
        kwargs.setdefault("settings", amber_settings)
        kwargs.setdefault("store", tmp_path / f"amber-{len(made)}.db")
        runtime = Runtime(**kwargs).start()
        made.append(runtime)
        return runtime

    yield make
    for runtime in reversed(made):
        runtime.stop()


@pytest.fixture
def amber_runtime(amber_runtime_factory: Callable[..., Any], amber_adapters: list[Any]) -> Any:
    """A started ``Runtime`` on a SQLite file in the test's temp dir."""
    return amber_runtime_factory(adapters=amber_adapters)


@pytest.fixture
def amber_memory_runtime(
    amber_runtime_factory: Callable[..., Any], amber_adapters: list[Any]
) -> Any:
    """A started ``Runtime`` on an in-memory store."""
    return amber_runtime_factory(store=":memory:", adapters=amber_adapters)


@pytest.fixture
def amber_scripted_model() -> Callable[..., Any]:
    """``make(script, fallback=None)``: a new ``ScriptedModel`` (see ``actors.ScriptedModel``)."""
    from actors import ScriptedModel

    def make(script: Any, *, fallback: Any = None) -> Any:
        return ScriptedModel(script, fallback=fallback)

    return make
