"""The app ``amber worker --app worker_app:make_app`` runs in the fault tests.

``$WORKER_MODEL`` picks the model: ``hang`` (every call hangs: a turn stays in
flight until the process dies), ``slow`` (answers after ``$WORKER_DELAY``
seconds, ``from <name>``), or ``fast`` (answers at once, ``from <name>``).
"""

from __future__ import annotations

import os
from typing import Any

from actors import ScriptedModel, Settings
from runtime import hang, reply


def make_app() -> dict[str, Any]:
    """The model the environment asks for, and settings without passivation."""
    kind = os.environ.get("WORKER_MODEL", "fast")
    name = os.environ.get("WORKER_NAME", "worker")
    if kind == "hang":
        model = ScriptedModel([], fallback=hang())
    elif kind == "slow":
        delay = float(os.environ.get("WORKER_DELAY", "3"))
        model = ScriptedModel([], fallback=reply(f"from {name}").after(delay))
    else:
        model = ScriptedModel([], fallback=reply(f"from {name}"))
    return {"model": model, "settings": Settings(passivate_after=None)}
