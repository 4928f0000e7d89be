"""The CLI and provider models: chat --model, show --call, --view's note, costs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import Recorded, amber
from cli_support import recorded as demo_store  # noqa: F401  (the fixture)
from provider_support import FIXTURES, model_for, wire

from actors import Runtime, Settings, tool
from actors.providers.testing import Reply, StubServer, load_fixture
from runtime import Attachment, Price, PriceTable, rebuild_request
from runtime.store import SQLiteStore

PRICES = PriceTable({"claude-sonnet-4-6": Price(input=3.0, output=15.0, cached_input=0.3)})


AMBER = [sys.executable, "-c", "from actors._cli import main; raise SystemExit(main())"]


@tool
def lookup(query: str = "") -> str:
    """Looks up the weather of a city."""
    return f"Sunny in {query}"


def replies(provider: str, name: str) -> list[Reply]:
    return list(load_fixture(FIXTURES / provider / f"{name}.json")["replies"])


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[object]]:
    """A store with one Anthropic turn (a tool step with thinking, then the answer) and the
    bodies the stub received."""
    db = tmp_path_factory.mktemp("providers") / "amber.db"
    with StubServer() as server:
        server.queue(*replies("anthropic", "parallel_calls"), *replies("anthropic", "text"))
        settings = Settings(passivate_after=None, system_prompt="Be brief.", prices=PRICES)
        with Runtime(
            model=model_for("anthropic", server), store=db, tools=[lookup], settings=settings
        ) as rt:
            rt.send("s", "Weather in Tokyo and Paris?", sender="Chii")
            rt.wait_idle("s", timeout=10)
        bodies = [r.json for r in server.requests]
    return db, bodies


class TestShowCall:
    def test_json_is_the_request_the_provider_received(
        self, recorded: tuple[Path, list[object]]
    ) -> None:
        """amber show --call N --json: the body is what the stub got, exact, with the path."""
        db, bodies = recorded
        for number, body in enumerate(bodies, start=1):
            result = amber("show", "s", "--call", number, "--db", db, "--json")
            assert result.exit_code == 0, result.output
            data = json.loads(result.output)
            assert data["exact"] is True
            assert data["body"] == body
            assert (data["method"], data["path"]) == ("POST", "/v1/messages")
            assert data["provider"] == "anthropic"
            assert data["cost_usd"] > 0

    def test_people_see_the_check_and_the_body(self, recorded: tuple[Path, list[object]]) -> None:
        """Without --json: the call, where it was built, the digest check, then the JSON."""
        db, _ = recorded
        result = amber("show", "s", "--call", "2", "--db", db)
        assert result.exit_code == 0, result.output
        assert "model call #2" in result.output
        assert "✓ exact" in result.output
        assert '"type": "thinking"' in result.output

    def test_unknown_call(self, recorded: tuple[Path, list[object]]) -> None:
        """A call the session does not have: exit 3 and the range it has."""
        db, _ = recorded
        result = amber("show", "s", "--call", "9", "--db", db)
        assert result.exit_code == 3
        assert "has no model call 9; its calls are #1 to #2" in result.output

    def test_a_scripted_call_recorded_no_request(self, tmp_path: Path) -> None:
        """The demo's scripted model reports no request: the error says why."""
        db = tmp_path / "demo.db"
        assert amber("demo", "--db", db).exit_code == 0
        result = amber("show", "demo", "--call", "1", "--db", db)
        assert result.exit_code == 1
        assert "recorded no request" in result.output

    def test_a_call_that_sent_an_image(self, tmp_path: Path) -> None:
        """The image's bytes live in the application's artifact store, which the CLI does not
        have: the request is still shown, the image's bytes stood in for, with how to rebuild
        it exactly (rebuild_request with the store) instead of a bare failure."""
        db = tmp_path / "amber.db"

        class Artifacts:
            def read(self, attachment: Attachment) -> bytes:
                return b"\x89PNG\r\n"

        image = Attachment(id="art_1", name="cat.png", kind="image", media_type="image/png")
        with StubServer() as server:
            server.queue(*replies("anthropic", "text"))
            settings = Settings(passivate_after=None, artifacts=Artifacts())
            with Runtime(model=model_for("anthropic", server), store=db, settings=settings) as rt:
                rt.send("s", "What is this?", attachments=[image])
                rt.wait_idle("s", timeout=10)
            (body,) = [r.json for r in server.requests]
        result = amber("show", "s", "--call", "1", "--db", db)
        assert result.exit_code == 0, result.output
        assert "cat.png" in result.output
        assert "rebuild_request(" in result.output
        assert "artifacts=" in result.output
        data = json.loads(amber("show", "s", "--call", "1", "--db", db, "--json").output)
        assert data["exact"] is None  # not checked: the bytes were not there to digest
        content = data["body"]["messages"][0]["content"]
        sent = body["messages"][0]["content"]  # type: ignore[index]
        assert [block["type"] for block in content] == [block["type"] for block in sent]
        image_block = next(block for block in content if block["type"] == "image")
        assert "cat.png" in image_block["source"]["data"]
        assert "art_1" in data["note"]

    def test_replay_from_python_is_the_same(self, recorded: tuple[Path, list[object]]) -> None:
        """rebuild_request over the stored timeline gives the same payload."""
        db, bodies = recorded
        with SQLiteStore(db) as store:
            line = store.load_timeline("s")
        rebuilt = rebuild_request(line, 1)
        assert rebuilt.exact
        assert json.loads(json.dumps(wire("anthropic", rebuilt.payload))) == bodies[0]


class TestViewNote:
    def test_view_says_which_call_was_sent_that_state(
        self, recorded: tuple[Path, list[object]]
    ) -> None:
        """--view at the seq a call was built from names the call and --call."""
        db, _ = recorded
        with SQLiteStore(db) as store:
            state = store.load_state("s")
        row = state.model_calls()[1]
        assert row.request is not None
        seq = row.request.view_seq
        result = amber("show", "s", "--at", seq, "--view", "anthropic", "--db", db)
        assert result.exit_code == 0, result.output
        assert "Model call #2 was sent this state's view" in result.output
        # User trial: the command left --db out; pasted, it read ./amber.db.
        assert f"amber show s --call 2 --db {db} prints that exact request" in result.output
        other = amber("show", "s", "--at", 1, "--view", "anthropic", "--db", db)
        assert "No model call was sent the view of seq 1" in other.output


class TestCosts:
    def test_sessions_and_show_say_what_it_cost(self, recorded: tuple[Path, list[object]]) -> None:
        """amber sessions has a cost column; amber show's header sums the calls."""
        db, _ = recorded
        listing = amber("sessions", "--db", db, "--json")
        (entry,) = json.loads(listing.output)
        assert entry["cost_usd"] > 0
        table = amber("sessions", "--db", db)
        assert "cost" in table.output
        assert "$0.0" in table.output
        shown = amber("show", "s", "--db", db)
        assert "2 model calls, $0.0" in shown.output


class TestChatModel:
    def test_a_missing_key_is_one_line_naming_the_variable(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """amber chat --model anthropic:… without ANTHROPIC_API_KEY: exit 2, one line."""
        monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
        result = amber("chat", "--model", "anthropic:claude-sonnet-4-6", "--db", tmp_path / "c.db")
        assert result.exit_code == 2
        assert "ANTHROPIC_API_KEY is not set" in result.output
        assert "Traceback" not in result.output

    @pytest.mark.parametrize(
        ("spec", "expected"),
        [
            ("gpt-4.1", "A model is named PROVIDER:MODEL"),
            ("bard:x", "Unknown provider 'bard'"),
            ("openai-compatible:llama3", "needs --base-url"),
        ],
    )
    def test_bad_specs(self, tmp_path: Path, spec: str, expected: str) -> None:
        """A malformed --model is a usage error that says what is expected."""
        result = amber("chat", "--model", spec, "--db", tmp_path / "c.db")
        assert result.exit_code == 2
        assert expected in result.output

    def test_a_compatible_server_chat(self, tmp_path: Path) -> None:
        """amber chat --model openai-compatible:NAME --base-url URL talks to that server."""
        with StubServer() as server:
            server.queue(*replies("openai", "text"))
            db = tmp_path / "c.db"
            result = amber(
                "chat", "--model", "openai-compatible:llama3.1:8b", "--base-url",
                server.url + "/v1", "--db", db, "--no-stream", input="Weather?\n/exit\n",
            )  # fmt: skip
            assert result.exit_code == 0, result.output
            assert "Sunny in Tokyo." in result.output
            (received,) = server.requests
        assert received.json["model"] == "llama3.1:8b"
        assert received.headers["authorization"] == "Bearer not-needed"

    def test_a_failed_call_shows_what_the_provider_said(self, tmp_path: Path) -> None:
        """Under the short crash notice, chat prints the detail a person can act on."""
        with StubServer() as server:
            server.queue(*replies("openai", "bad_request"))
            result = amber(
                "chat", "--model", "openai-compatible:llama3.1:8b", "--base-url",
                server.url + "/v1", "--db", tmp_path / "c.db", "--no-stream",
                input="Weather?\n/exit\n",
            )  # fmt: skip
        assert result.exit_code == 0, result.output
        assert "The model provider refused my request" in result.output  # its own notice
        assert "ModelRequestError" in result.output

    def test_a_failed_call_is_not_logged_raw_on_the_terminal(self, tmp_path: Path) -> None:
        """As a process: the failure shows once, under the notice, not again as a raw log line
        ("session …: turn failed: …" from Python's last-resort handler on stderr)."""
        with StubServer() as server:
            server.queue(*replies("openai", "bad_request"))
            process = subprocess.run(
                [*AMBER, "chat", "--model", "openai-compatible:llama3.1:8b", "--base-url",
                 server.url + "/v1", "--db", str(tmp_path / "c.db"), "--no-stream"],
                input="Weather?\n/exit\n", capture_output=True, text=True, timeout=120,
            )  # fmt: skip
        assert process.returncode == 0, process.stderr
        assert "The model provider refused my request" in process.stdout
        assert "ModelRequestError" in process.stdout
        assert "turn failed:" not in process.stdout + process.stderr

    def test_resume_with_a_real_model(self, demo_store: Recorded, tmp_path: Path) -> None:  # noqa: F811
        """amber resume SESSION --model …: a fork's pending question goes to that model."""
        db = demo_store.copy(tmp_path)
        assert amber("fork", "demo", "--at", 16, "--as", "again", "--db", db).exit_code == 0
        with StubServer() as server:
            server.queue(*replies("openai", "text"))
            result = amber(
                "resume", "again", "--model", "openai-compatible:llama3.1:8b", "--base-url",
                server.url + "/v1", "--db", db,
            )  # fmt: skip
            assert result.exit_code == 0, result.output
            assert "Sunny in Tokyo." in result.output
            (received,) = server.requests
        assert received.json["messages"][-1]["role"] == "user"
