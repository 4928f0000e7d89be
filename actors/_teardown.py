"""What ``Runtime.stop`` stops, in order, and how: every step is tried.

A step that fails (a store whose close raises, say) is logged and the stop goes
on: the steps after it still stop their threads and let the store go (a lock
kept would refuse every later runtime on the file in this process). The first
error is raised once all are done.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any, Protocol

import pykka

from ._deadline import STORE_FLOOR, Deadline
from ._effects import Effects
from ._errors import EffectsStopped, StopTimeout
from ._gateway import Gateway
from ._router import Router
from ._runtime_args import _stop

__all__ = ["stop_all", "stop_in_background"]

log = logging.getLogger("amber.runtime")

Step = tuple[str, Callable[[], object]]


class Stoppable(Protocol):
    """What ``stop_all`` stops: the parts a ``Runtime`` started (``Runtime`` is one; this
    module does not import it, which imports this)."""

    router: Router
    gateway: Gateway
    model: Any
    _keeper: Any
    _watch: Any
    _effects: Effects | None
    _store: Any
    _hold: Any
    _tool_refs: dict[str, pykka.ActorRef[Any]]
    _adapter_refs: list[pykka.ActorRef[Any]]


def stop_all(rt: Stoppable, why: str, deadline: Deadline) -> None:
    """Stop what ``rt`` started, every step tried (``why``: ``RuntimeStopped``'s message),
    each waiting for what is left of ``deadline`` (the store's close at least
    ``STORE_FLOOR`` s).

    Raises:
        Exception: the first step's error, once every step was tried.
    """
    first: Exception | None = None
    for name, step in _steps(rt, why, deadline):
        try:
            step()
        except Exception as exc:
            log.exception("the runtime's stop could not %s; it goes on", name)
            first = first or exc
    if first is not None:
        raise first


def stop_in_background(rt: Any) -> None:
    """Stop ``rt``, a ``Runtime`` that lost its name, on a thread of its own."""
    threading.Thread(target=_stop_unless_begun, args=(rt,), name="amber-stop", daemon=True).start()


def _stop_unless_begun(rt: Any) -> None:
    """Stop ``rt`` unless a stop already runs (the user's, say): that one stops it, however
    long it takes. One log line either way, never a traceback: the lease keeper logged why,
    and ``rt.failed`` holds it."""
    with rt._lock:
        begun = rt._state in ("stopping", "stopped")
    if begun:
        log.info("the runtime lost its name; the stop already under way stops it")
        return
    try:
        rt.stop()
    except StopTimeout:  # a stop began meanwhile, and outlived this one's timeout
        log.info("the runtime lost its name; the stop already under way stops it")
    except Exception as exc:  # its steps logged their errors
        log.error("the runtime lost its name and its stop failed: %s", exc)


def _steps(rt: Stoppable, why: str, deadline: Deadline) -> Iterable[Step]:
    left = deadline.left
    keeper, watch, effects, store, hold = rt._keeper, rt._watch, rt._effects, rt._store, rt._hold
    if keeper is not None:  # no session is claimed while the others shut down
        yield "close the lease keeper's intake", keeper.close_intake
    if watch is not None:
        yield "stop the answer watch", lambda: watch.stop(why)
    # The drain: a reply an adapter is sending now is recorded delivered before the
    # sessions stop, so that a restart does not send it again.
    yield "close the router", lambda: rt.router.close(why, timeout=deadline, drain=rt.gateway.drain)
    if keeper is not None:  # gives the leases back while the store still runs
        yield "stop the lease keeper", keeper.stop
    for ref in [*rt._tool_refs.values(), *rt._adapter_refs]:
        yield f"stop {ref}", functools.partial(_stop_by, ref, deadline)
    yield "close the subscriptions", rt.gateway.close_subscriptions
    if effects is not None:
        yield "close the model", lambda: _close_model(rt.model, effects, min(left(), 5.0))
        yield "stop the effects loop", lambda: effects.stop(timeout=left())
    if store is not None:
        yield "stop the store", lambda: store.stop(timeout=left(STORE_FLOOR))
    if hold is not None:
        yield "let the store go", hold.release


def _stop_by(ref: Any, deadline: Deadline) -> None:
    _stop(ref, deadline.left())


def _close_model(model: Any, effects: Effects, timeout: float) -> None:
    """Let a provider model close its HTTP client on the effects loop it ran on."""
    aclose = getattr(model, "aclose", None)
    if aclose is None or not effects.alive:
        return
    try:
        handle = effects.submit(aclose, name="close the model's client")
    except EffectsStopped:
        return
    handle.done.wait(timeout)
