"""The ``amber`` console script (skeleton until the CLI issue)."""

from __future__ import annotations

import pytest

from actors._cli import main
from runtime import EVENT_TYPES


class TestMain:
    def test_events_lists_every_kind(self, capsys: pytest.CaptureFixture[str]) -> None:
        """`amber events` prints one line per event kind."""
        assert main(["events"]) == 0
        lines = capsys.readouterr().out.splitlines()
        assert [line.split()[0] for line in lines] == list(EVENT_TYPES)

    def test_unknown_command_exits_2(self, capsys: pytest.CaptureFixture[str]) -> None:
        """An unknown command is a usage error naming the choices."""
        with pytest.raises(SystemExit) as exc:
            main(["nope"])
        assert exc.value.code == 2
        assert "invalid choice: 'nope'" in capsys.readouterr().err
