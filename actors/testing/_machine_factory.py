"""``lifecycle_machine``: a ``LifecycleMachine`` subclass made from your parts and options,
each option checked (its name, and a value that fits) before the class is made.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pykka

from runtime.testing._answers import PLAN_OPTIONS
from runtime.testing._options import (
    Check,
    check_machine_class,
    check_options,
    choice,
    flag,
    instance,
    mapping_of_flags,
    number,
    optional_path,
    sequence_of,
    session_names,
    whole,
    with_article,
)

from .._errors import InvalidConfig
from .._model import Model
from .._settings import Settings
from .._tools import Tool, tool
from ._machine import LifecycleMachine

__all__ = ["lifecycle_machine"]

LIFECYCLE_OPTIONS: dict[str, Check] = {
    "tools": sequence_of(lambda t: isinstance(t, Tool) or callable(t), "Tools or functions"),
    "sessions": session_names,
    "store": choice("memory", "sqlite", "postgres"),
    "runtime_settings": instance(Settings, what="an actors.Settings"),
    "wait_timeout": number(positive=True),
    "cancel_grace": number(positive=True),
    "stop_timeout": number(positive=True),
    "slow_seconds": number(positive=False),
    "check_views": choice("every", "idle", "never"),
    "compare_heads": choice("every", "idle", "never"),
    "extra_checks": sequence_of(callable, "functions (state) -> None"),
    "max_answers": whole(1),
    "plan_options": mapping_of_flags(PLAN_OPTIONS),
    "report_at": choice("quiet", "step"),
    "restart_every": whole(1),
    "failures_dir": optional_path,
    "explain": flag,
    "model_may_always_fail": flag,
}
"""The checks of ``lifecycle_machine``'s options."""


def _check_machine(tools: Any, model: Any, adapters: Any, name: Any, base: Any) -> None:
    """The arguments of ``lifecycle_machine`` that are not (only) class attributes."""
    function = "lifecycle_machine"
    check_machine_class(function, base, LifecycleMachine, name, error=InvalidConfig)
    if adapters is not None and not callable(adapters):
        raise InvalidConfig(
            f"{function}() option 'adapters' must be None or a function that starts the "
            f"adapters (called at each (re)start) (got {adapters!r})."
        )
    if model is not None and not callable(model) and not hasattr(model, "stream"):
        raise InvalidConfig(
            f"{function}() option 'model' must be None, a Model or a function that makes one "
            f"per example (got {model!r} that is {with_article(type(model).__name__)})."
        )
    if isinstance(tools, str | bytes) or not isinstance(tools, Sequence):
        raise InvalidConfig(
            f"{function}() option 'tools' must be a sequence of Tools or functions (got {tools!r})."
        )
    names: dict[str, int] = {}
    for i, item in enumerate(tools):
        if not isinstance(item, Tool) and not callable(item):
            raise InvalidConfig(
                f"{function}() option 'tools' must hold Tools or functions; tools[{i}] is "
                f"{item!r} that is {with_article(type(item).__name__)}."
            )
        made = item if isinstance(item, Tool) else tool(item)
        if made.name in names:
            raise InvalidConfig(
                f"{function}() option 'tools' must name each tool once; tools[{names[made.name]}] "
                f"and tools[{i}] are both called {made.name!r}."
            )
        names[made.name] = i


def lifecycle_machine(
    *,
    tools: Sequence[Tool | Callable[..., Any]] = (),
    model: Model | Callable[[], Model] | None = None,
    adapters: Callable[[], Sequence[pykka.ActorRef[Any]]] | None = None,
    name: str = "LifecycleMachine",
    base: type[LifecycleMachine] = LifecycleMachine,
    **options: Any,
) -> type[LifecycleMachine]:
    """A ``LifecycleMachine`` subclass with your parts plugged in.

    Args:
        tools: your tools.
        model: a model, or a function that makes one per example; None uses
            the kit's ``PlannedModel``.
        adapters: a function that starts your adapters (called at each
            (re)start); None uses the default live and silent channels.
        name: the class name (shown in failures and saved files).
        base: the class to subclass.
        **options: other class attributes (``sessions``, ``store``,
            ``runtime_settings``, ``wait_timeout`` …).

    Returns:
        The class; run it with ``TestX = lifecycle_machine(...).TestCase``.

    Raises:
        InvalidConfig: an option is unknown or does not fit (the message names it, what was
            expected and what was given).
    """
    _check_machine(tools, model, adapters, name, base)
    check_options("lifecycle_machine", base, options, LIFECYCLE_OPTIONS, error=InvalidConfig)
    namespace: dict[str, Any] = {"tools": tuple(tools), **options, "__module__": base.__module__}
    if model is not None:

        def make_model(self: LifecycleMachine) -> Model:
            if not callable(model) or (hasattr(model, "stream") and not isinstance(model, type)):
                return model
            made: Model = model()
            return made

        namespace["make_model"] = make_model
    if adapters is not None:
        namespace["make_adapters"] = lambda self: adapters()
    return type(name, (base,), namespace)
