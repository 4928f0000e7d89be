"""How a runtime takes part in a shared (PostgreSQL) store: by leases, or as a front end.

A runtime that runs sessions on a shared store owns each of them through a
lease (DESIGN §10): its ``LeaseKeeper`` claims, renews and gives back leases
and wakes it for sessions with work waiting. A front end
(``Runtime(run_sessions=False)``) runs no session and takes no lease: its
router refuses to load any, and an ``AnswerWatch`` reads the answers the
workers store. ``route_input`` takes an input to the session wherever it runs: to its
actor here, or stored for its owner elsewhere; ``add_notification`` needs its actor here.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from runtime import Draft, Message, TurnSettings

from ._errors import OwnedElsewhere
from ._frontend import AnswerWatch, runs_no_sessions
from ._ids import Clock
from ._leasing import LeaseKeeper
from ._ownership import StoreBusy
from ._router import Router
from ._settings import Settings
from ._storage import StoreThread

__all__ = ["add_notification", "join_shared_store", "route_input"]

log = logging.getLogger("amber.runtime")


def join_shared_store(
    opened: object,
    store: StoreThread,
    router: Router,
    *,
    owner: str,
    clock: Clock,
    turn_settings: TurnSettings,
    settings: Settings,
    wake: bool,
    run_sessions: bool,
    delivers: Callable[[Message], bool] | None,
    on_name_lost: Callable[[StoreBusy], None],
) -> tuple[LeaseKeeper, AnswerWatch | None]:
    """Start taking part in the shared store ``opened`` (run by ``store``).

    A runner of sessions starts its lease keeper, and the router claims each
    session's lease from then on. A front end (``run_sessions`` False) keeps the
    keeper unstarted (its name stays held), loads no session, and starts an
    ``AnswerWatch``, which it returns.
    """
    keeper = LeaseKeeper(
        store=store, router=router, owner=owner, clock=clock, turn_settings=turn_settings,
        ttl=settings.lease_ttl, poll=settings.lease_poll, wake=wake, delivers=delivers,
        on_name_lost=on_name_lost,
    )  # fmt: skip
    if run_sessions:
        keeper.start()  # the router claims each session's lease from now on
        return keeper, None
    router.claim = runs_no_sessions  # no session is loaded here
    watch = AnswerWatch(store, poll=settings.lease_poll)
    if getattr(opened, "made", False):  # a new schema: no worker reads it yet
        log.warning(
            "Runtime(run_sessions=False): schema %r held no Amber store, so an empty one was "
            "made; input sent here is answered only by workers on that same schema. Check the "
            "schema name ($AMBER_PG_SCHEMA, or the store's schema=) if the workers run already.",
            getattr(opened, "_schema", None),
        )
    watch.start()
    return keeper, watch


def route_input(
    router: Router,
    keeper: LeaseKeeper | None,
    session_id: str,
    draft: Draft,
    *,
    run_sessions: bool,
    timeout: float,
) -> Message:
    """Store the input ``draft`` of ``session_id`` where the session runs, and return it as
    stored: by its actor here (loaded, and its lease claimed, if need be), or, on a shared
    store, for its owner elsewhere (``LeaseKeeper.store_input``: the owner is woken).

    The session may passivate here (its lease given back) and another worker take it
    between the claim, or the look at the live table, and the call reaching its actor: the
    router then finds it owned elsewhere, before any actor took the input, and the input
    is stored for that owner, once, as if it had been owned elsewhere from the start.

    Raises:
        RuntimeStopped: the runtime (or its lease keeper) is stopping.
        SeqConflict: input stored for another owner met the owner's writes at every try.
    """
    if keeper is not None and not run_sessions:
        return keeper.store_input(session_id, draft)  # a worker, woken, answers it
    if keeper is not None and not router.live(session_id) and not keeper.ensure(session_id):
        return keeper.store_input(session_id, draft)  # its owner, elsewhere, is woken
    try:
        added: Message = router.call(session_id, lambda p: p.add_input(draft), timeout=timeout)
    except OwnedElsewhere:
        if keeper is None:
            raise
        # Taken over after the claim: no actor here took the input (the router refuses
        # before routing it), so its new owner gets it.
        return keeper.store_input(session_id, draft)
    return added


def add_notification(router: Router, session_id: str, draft: Draft, *, timeout: float) -> Message:
    """Deliver the notification ``draft`` through the session's actor here (loaded, and its
    lease claimed, if need be) and return it as stored.

    Raises:
        OwnedElsewhere: another worker runs the session (a notification is not stored for
            an owner elsewhere: it is delivered by the actor that runs the session).
    """
    try:
        added: Message = router.call(session_id, lambda p: p.add_output(draft), timeout=timeout)
    except OwnedElsewhere as exc:
        raise OwnedElsewhere(
            f"Session {session_id!r} is run by another worker (it holds the session's lease): "
            "posting a notification needs the session's actor, and a notification is not "
            "stored for another owner. Post it on the worker that runs the session; send and "
            "post of any other category store the input for the owner from here."
        ) from exc
    return added
