"""What a ``Runtime`` is made with, checked before anything starts.

The model (a front end, ``run_sessions=False``, may have none), the tools and
the adapters: each refused with ``InvalidConfig`` saying what was expected, what
was given, and how to write it. Adapters are started actors handed over with
the call, so a refused call stops them (``_stop``), as ``Runtime.stop`` does.
"""

from __future__ import annotations

import inspect
import logging
from typing import Any

import pykka

from runtime._article import article, type_named

from ._adapter import Adapter
from ._errors import InvalidConfig
from ._model import Model
from ._settings import Settings

log = logging.getLogger("amber.runtime")


def check_settings(settings: object) -> Settings:
    """``settings``, or the defaults for None.

    Raises:
        InvalidConfig: it is no ``Settings`` (a dict of its fields, say).
    """
    if settings is None:
        return Settings()
    if isinstance(settings, Settings):
        return settings
    if isinstance(settings, dict) and all(isinstance(key, str) for key in settings):
        fix = "Settings(" + ", ".join(f"{k}={v!r}" for k, v in settings.items()) + ")"
    else:
        fix = "Settings(passivate_after=600, ...)"
    raise InvalidConfig(
        f"settings must be a Settings (got {settings!r} that is {type_named(settings)}); "
        f"make one by name: settings={fix}."
    )


def _front_end_model(model: Model | None, run_sessions: object, resume: object) -> Model:
    """The model a runtime runs sessions with; a front end (``run_sessions=False``) that
    runs none may have none."""
    if not isinstance(run_sessions, bool):
        raise InvalidConfig(
            f"run_sessions must be True or False (got {run_sessions!r}); False makes a front "
            "end that stores input for PostgreSQL workers and runs no session."
        )
    if run_sessions:
        if model is None:
            raise InvalidConfig(
                "Runtime needs a model to run sessions: pass model=… (a ScriptedModel or a "
                "provider model), or run_sessions=False for a front end that stores input "
                "for the workers of a PostgreSQL store and runs no session."
            )
        return model
    if resume != "none":
        raise InvalidConfig(
            f"A front end (run_sessions=False) resumes no sessions (got resume={resume!r}); "
            "leave resume at 'none': the workers (resume='all') run them."
        )
    return model if model is not None else _NoModel()


class _NoModel:
    """A front end's model: never called (a front end loads no session)."""

    name = "none"

    async def stream(self, request: Any) -> Any:  # pragma: no cover - never loaded
        raise InvalidConfig("This runtime runs no sessions (run_sessions=False).")
        yield


def _tool_list(tools: object) -> list[Any]:
    if callable(tools) or isinstance(tools, str | bytes) or not hasattr(tools, "__iter__"):
        name = getattr(tools, "__name__", None) or getattr(tools, "name", None)
        example = f"[{name}]" if callable(tools) and isinstance(name, str) else "[my_tool]"
        raise InvalidConfig(
            f"tools takes a list of tools (functions, or Tools made with tool(...)); got "
            f"{tools!r} that is {type_named(tools)}. Write tools={example}."
        )
    return list(tools)


def _adapter_list(adapters: object) -> list[Any]:
    if isinstance(adapters, pykka.ActorRef):
        _stop(adapters, 5.0)
        raise InvalidConfig(
            f"adapters takes a list of adapter refs (got the one ref {adapters!r}); write "
            "adapters=[ref]."
        )
    if isinstance(adapters, str | bytes) or not hasattr(adapters, "__iter__"):
        raise InvalidConfig(
            f"adapters takes a list of adapter refs (got {adapters!r} that is "
            f"{type_named(adapters)}); write adapters=[SomeAdapter.start(...)]."
        )
    return list(adapters)


def _check_adapters(refs: list[Any]) -> None:
    """Each must be the ref of a started, running ``Adapter`` actor."""
    for index, ref in enumerate(refs):
        what = f"adapters[{index}]"
        if isinstance(ref, type) and issubclass(ref, Adapter):
            name = ref.__name__
            raise InvalidConfig(
                f"{what} is the class {name}, not a started adapter; pass the ref that "
                f"starting it returns: adapters=[{name}.start(...)]."
            )
        if isinstance(ref, Adapter):
            name = type(ref).__name__
            raise InvalidConfig(
                f"{what} is {article(name)} that was never started (got {ref!r}); pass "
                f"{name}.start(...), the ref of a started actor, not {name}(...)."
            )
        if not isinstance(ref, pykka.ActorRef):
            raise InvalidConfig(
                "adapters takes started Adapter actors (the refs SomeAdapter.start(...) "
                f"returns); {what} is {ref!r} that is {type_named(ref)}."
            )
        name = ref.actor_class.__name__
        if not issubclass(ref.actor_class, Adapter):
            raise InvalidConfig(
                f"{what} runs {article(name)}, which is not an Adapter; subclass actors.Adapter "
                "(it takes the runtime's updates and reports deliveries)."
            )
        if not ref.is_alive():
            raise InvalidConfig(
                f"{what} ({name}) has stopped; start a new one ({name}.start(...)) for this "
                "runtime: a runtime stops its adapters when it stops."
            )


def _stop(ref: pykka.ActorRef[Any], timeout: float) -> None:
    try:
        ref.stop(block=True, timeout=timeout)
    except pykka.ActorDeadError:
        pass
    except pykka.Timeout:
        log.warning("actor %s did not stop within %s s", ref, timeout)


def check_store_function(fn: object) -> None:
    """``call_store``'s ``fn``: a function the store thread can call with the store."""
    got = f"{fn!r} that is {type_named(fn)}"
    takes_one = callable(fn)
    if takes_one:
        try:
            inspect.signature(fn).bind(None)  # type: ignore[arg-type]
        except TypeError:
            takes_one, got = False, f"{fn!r} that cannot be called with one argument"
        except ValueError:  # a builtin without a signature: it says so when called
            pass
    if not takes_one:
        raise InvalidConfig(
            f"call_store() takes a function of one argument, the store (got {got}). "
            "Write rt.call_store(lambda store: store.list_sessions())."
        )
