"""``amber show --view`` of a state whose current turn holds an image.

The model's view sends a current-turn image's bytes, which live in the
application's artifact store, not in the Amber store: the CLI has none. The
views are still printed, each image a short placeholder with its name, media
type and size (it was exit 1, ``MissingArtifact``).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from cli_support import amber

from actors import Runtime, ScriptedModel, Settings, reply
from runtime import Attachment

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 92
"""The image's bytes (100), in the application's artifact store only."""

PROVIDERS = ["openai", "openai-responses", "anthropic", "gemini"]


class Artifacts:
    """The application's artifact store."""

    def read(self, attachment: Attachment) -> bytes:
        return PNG


@pytest.fixture(scope="module", params=["no digest", "sha256"])
def stored(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A session whose first input carries an image (with or without a recorded sha256)."""
    db = tmp_path_factory.mktemp("images") / "amber.db"
    image = Attachment(
        id="art_1",
        name="cat.png",
        kind="image",
        media_type="image/png",
        size=len(PNG),
        sha256=hashlib.sha256(PNG).hexdigest() if request.param == "sha256" else None,
    )
    settings = Settings(passivate_after=None, artifacts=Artifacts())
    with Runtime(model=ScriptedModel([reply("A cat.")]), store=db, settings=settings) as rt:
        rt.send("s", "What is this?", attachments=[image])
        rt.wait_idle("s", timeout=10)
    return db


PLACEHOLDER = "<image cat.png (image/png, 100 bytes, artifact art_1): bytes not shown"


class TestProviderViews:
    @pytest.mark.parametrize("view", PROVIDERS)
    def test_the_image_is_a_placeholder(self, stored: Path, view: str) -> None:
        """At seq 2 (the turn started, the image in its input) every provider view prints."""
        result = amber("show", "s", "--view", view, "--at", 2, "--db", stored)
        assert result.exit_code == 0, result.output
        assert PLACEHOLDER in result.stdout
        assert "What is this?" in result.stdout
        assert "iVBORw0KGgo" not in result.stdout  # no stand-in, nor real, bytes in base64

    @pytest.mark.parametrize("view", PROVIDERS)
    def test_json(self, stored: Path, view: str) -> None:
        result = amber("show", "s", "--view", view, "--at", 2, "--db", stored, "--json")
        assert result.exit_code == 0, result.output
        assert PLACEHOLDER in json.dumps(json.loads(result.stdout))

    @pytest.mark.parametrize("view", ["anthropic", "clean"])
    def test_one_message(self, stored: Path, view: str) -> None:
        first = json.loads(amber("show", "s", "--at", 1, "--json", "--db", stored).stdout)
        (message,) = first["state"]["messages"]
        result = amber(
            "show", "s", "--view", view, "--at", 2, "--message", message["id"], "--db", stored
        )
        assert result.exit_code == 0, result.output
        assert "cat.png (image/png, 100 bytes" in result.stdout


class TestCleanView:
    def test_text(self, stored: Path) -> None:
        result = amber("show", "s", "--view", "clean", "--at", 2, "--db", stored)
        assert result.exit_code == 0, result.output
        assert "🖼 cat.png (image/png, 100 bytes)" in result.stdout

    def test_json(self, stored: Path) -> None:
        result = amber("show", "s", "--view", "clean", "--at", 2, "--db", stored, "--json")
        assert result.exit_code == 0, result.output
        (user,) = json.loads(result.stdout)["messages"]
        assert user["parts"][1]["data"].startswith(PLACEHOLDER)


class TestWeb:
    def test_the_views_show_the_image(self, stored: Path) -> None:
        """amber web's views of that state (it answered with an error page)."""
        from web_support import Page, web

        with web(stored) as (client, _):
            for view in ("clean", "anthropic"):
                response = client.get(f"/session?s=s&at=2&view={view}")  # type: ignore[attr-defined]
                assert response.status_code == 200, response.text
                shown = Page.of(response.text).text("side")
                assert "cat.png (image/png, 100 bytes" in shown
