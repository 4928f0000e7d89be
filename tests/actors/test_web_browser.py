"""``amber web`` in a real browser: Debian's chromium, driven by playwright.

The browser is the system's (``/usr/bin/chromium``; ``.ci/run`` installs it),
never one playwright downloads. The test serves a copy of the demo's store
with ``amber web``, opens the session, steps to the interrupt with the keys,
reads the diff, moves with the slider, opens a model call, forks, and finds
the fork in the sessions list. Screenshots are saved as test artifacts in
``$AMBER_TEST_ARTIFACTS`` (default ``test-artifacts/`` at the repository
root). Every request must stay on the viewer's origin, and the page must log
no error (a Content-Security-Policy violation is one).

Marked ``browser``: ``.ci/run`` runs it. Without chromium or playwright it is
skipped with the reason, except in CI (``CI`` set), where it fails.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_support import Recorded, recorded
from web_support import AMBER, Ids

__all__ = ["recorded"]

pytestmark = pytest.mark.browser

CHROMIUM = Path(os.environ.get("AMBER_CHROMIUM", "/usr/bin/chromium"))
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = Path(
    os.environ.get("AMBER_TEST_ARTIFACTS", Path(__file__).resolve().parents[2] / "test-artifacts")
)


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI must run the browser test: .ci/run installs chromium)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser(recorded: Recorded) -> Iterator[Any]:
    """A headless chromium (the system's). The demo is recorded first: playwright's sync
    API runs an asyncio loop in this thread, on which ``Runtime.wait_idle`` warns."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright is not installed (pip install -e '.[test]')")
    if not CHROMIUM.exists():
        _unavailable(f"no chromium at {CHROMIUM} (apt-get install -y chromium)")
    with sync_playwright() as driver:
        launched = driver.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS)
        yield launched
        launched.close()


@pytest.fixture
def served(recorded: Recorded, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """``amber web`` on a copy of the demo's store, on a free port: its address and store."""
    db = recorded.copy(tmp_path)
    with subprocess.Popen(
        [*AMBER, "web", "--db", str(db), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        try:
            assert process.stdout is not None
            line = process.stdout.readline()
            match = re.search(r"at (http://127\.0\.0\.1:\d+)/ ", line)
            assert match, line + (process.stderr.read() if process.stderr else "")
            yield match.group(1), db
        finally:
            process.send_signal(signal.SIGINT)
            process.communicate(timeout=30)


def test_travel_to_the_interrupt_open_a_call_and_fork(
    browser: Any, served: tuple[str, Path], recorded: Recorded
) -> None:
    """The issue's walk: step to the interrupt, see the diff, open a call, fork, find the fork."""
    base, db = served
    interrupt = recorded.demo.interrupt_seq
    ids = Ids(recorded.demo.state)
    context = browser.new_context(viewport={"width": 1500, "height": 950})
    page = context.new_page()
    problems: list[str] = []
    foreign: list[str] = []
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    page.on(
        "console",
        lambda message: (
            problems.append(f"console {message.type}: {message.text}")
            if message.type in ("error", "warning")
            else None
        ),
    )

    def only_local(route: Any) -> None:
        if route.request.url.startswith(base + "/"):
            route.continue_()
        else:
            foreign.append(route.request.url)
            route.abort()

    context.route("**/*", only_local)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)

    # The sessions list, then the demo at its head.
    page.goto(base + "/")
    page.click("#sessions >> text=demo")
    assert page.text_content("#seq") == str(recorded.demo.events)

    # Back through the turn boundaries with '[' to the interrupt.
    while page.text_content("#seq") != str(interrupt):
        page.keyboard.press("[")
        page.wait_for_load_state()
        assert int(page.text_content("#seq") or 0) >= interrupt, "went past the interrupt"
    changes = page.text_content("#changes") or ""
    assert f"{ids.msg(11)} status: processing → interrupted" in changes
    assert f"{ids.turn(3)} turn: active → interrupted" in changes
    assert page.locator("#timeline tr.sel").get_attribute("id") == f"seq-{interrupt}"
    page.screenshot(path=str(ARTIFACTS / "web-interrupt.png"))

    # One step back with 'k', forward with 'j'; then the slider.
    page.keyboard.press("k")
    page.wait_for_load_state()
    assert page.text_content("#seq") == str(interrupt - 1)
    page.keyboard.press("j")
    page.wait_for_load_state()
    assert page.text_content("#seq") == str(interrupt)
    with page.expect_navigation():
        page.eval_on_selector(
            "input[type=range]",
            "(el, v) => { el.value = v; el.dispatchEvent(new Event('change')); }",
            str(interrupt - 1),
        )
    assert page.text_content("#seq") == str(interrupt - 1)

    # The view beside the state, with 'v': history.
    page.keyboard.press("v")
    page.wait_for_load_state()
    assert "session_history" in (page.text_content("#side") or "")

    # A model call: its response and its request, rebuilt.
    page.goto(f"{base}/session?s=demo&at={interrupt - 1}")
    page.click(f"#side >> text={ids.call(5)}")
    assert "write_report" in (page.text_content("#response") or "")
    assert "rebuilt" in (page.text_content("#rebuilt") or "")
    page.screenshot(path=str(ARTIFACTS / "web-model-call.png"))

    # Fork just before the interrupt, under a name.
    page.goto(f"{base}/session?s=demo&at={interrupt - 1}")
    page.fill("#fork input[name=as]", "demo-retry")
    page.click("#fork button")
    page.wait_for_load_state()
    assert page.text_content("#title", timeout=10_000).startswith("demo-retry")
    assert f"forked from demo at seq {interrupt - 1}" in (page.text_content("body") or "")
    assert "still active in the fork" in (page.text_content("#note") or "")
    page.goto(base + "/")
    assert "demo-retry" in (page.text_content("#sessions") or "")
    assert "fork of demo @ " in (page.text_content("#sessions") or "")
    page.screenshot(path=str(ARTIFACTS / "web-sessions.png"))

    context.close()
    assert not foreign, f"requests left the viewer: {foreign}"
    assert not problems, problems
    from runtime.store import SQLiteStore

    with SQLiteStore(db) as store:
        assert store.load_state("demo-retry").active_turn_id == ids.turn(3)


def test_chromium_is_debians(browser: Any) -> None:
    """The browser is the system's chromium, not a downloaded build."""
    assert browser.version
    assert shutil.which(str(CHROMIUM)) or CHROMIUM.exists()
