"""``Services``: what a runtime shares with its session actors."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs
import pykka

from runtime import ToolOutcome, ToolSpec

from ._effects import Effects
from ._ids import Clock, IdFactory
from ._model import Model
from ._settings import Settings
from ._storage import StoreThread
from ._tools import Toolbox

if TYPE_CHECKING:
    from ._gateway import Gateway

__all__ = ["Services"]


@attrs.define(eq=False, kw_only=True)
class Services:
    """The store thread, effects loop, gateway, model, tools and settings of a runtime."""

    store: StoreThread
    effects: Effects
    gateway: Gateway
    model: Model
    tools: Toolbox
    tool_specs: tuple[ToolSpec, ...]
    tool_refs: dict[str, pykka.ActorRef[Any]]
    settings: Settings
    ids: IdFactory
    clock: Clock
    passivate: Callable[[str, pykka.ActorRef[Any], int], None]
    """Called by an idle session actor: ``(session_id, its ref, its seq)``."""
    forget: Callable[[str, pykka.ActorRef[Any]], None]
    """Called by a session actor that stops on its own: ``(session_id, its ref)``."""

    @property
    def model_name(self) -> str | None:
        """The model's ``name`` attribute, if it has one (recorded in audit rows)."""
        name = getattr(self.model, "name", None)
        return name if isinstance(name, str) and name else None

    def tool_actor(self, name: str) -> pykka.ActorRef[Any]:
        """The actor that runs tool ``name`` (it must exist)."""
        return self.tool_refs[name]

    def unknown_tool(self, name: str) -> ToolOutcome:
        """The result for a call to a tool that does not exist."""
        known = ", ".join(sorted(self.tool_refs)) or "none"
        return ToolOutcome(
            content=(
                f"There is no tool named {name!r}. The tools you can call are: {known}. Call one "
                "of them, or answer without a tool."
            ),
            is_error=True,
            error_type="unknown_tool",
        )
