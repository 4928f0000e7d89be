"""Owning sessions in a shared store: leases, renewal, waking on new input (DESIGN §10).

With a ``PostgresStore`` several runtimes (workers) share one store. A
``LeaseKeeper`` makes a runtime own the sessions it runs:

- **Claiming.** Before a session is loaded to run here, its lease is taken
  (``ensure``); the store then fences every write to it with the lease's
  token, so once another worker takes the session over, nothing more from
  here is stored (``LeaseLost``). Claims take turns under a lock, and none
  is taken once the runtime stops (``close_intake``).
- **Renewal.** A thread renews the leases held every ``ttl / 3`` seconds,
  also between the pick-ups of a long batch: all of them in one store call
  (``renew_all``, one transaction), with one expiry from the worker's clock.
  A renewal the database did not answer is tried again at the next one; a
  lease another worker took over, or one that could not be renewed before
  its expiry, stops that session here. A lost lease stays held (the store refuses every write to the
  session) until it is given back, and a claim of the session asks for a
  new one.
- **Release.** A session that passivates, and every session when the
  runtime stops, gives its lease back, so another worker may take it at once
  (the poll gives back any that could not be given back then). So does a
  session whose load failed, unannounced: workers that all fail to load it (a
  damaged row) would otherwise hand it to each other as fast as they could.
- **Waiting for a person.** A session whose only work is a turn waiting for
  tool calls to be approved is not picked up (nothing would run; it would be
  loaded and passivated again at every poll) unless this runtime's
  ``approval_timeout`` must deny them in time; input for it, or a decision
  taken by a runtime that claims it, brings it back.
- **Waking.** The thread waits on the store's ``NOTIFY`` channel. A session
  that got new events from another process is reloaded if it runs here (a
  busy one by its own actor, which also reloads when the store refuses a
  write of it with ``SeqConflict``); in a worker (``wake=True``) a session
  nobody runs that has input waiting is claimed and loaded. A slow poll of
  the session list (``poll`` seconds) covers notifications lost while
  disconnected.
- **Input for another owner.** ``store_input`` stores an input for a session
  another worker owns, the way that owner's machine would (a ``MessageAdded``),
  and the ``NOTIFY`` of that append wakes the owner.
- **Decisions for another owner.** ``store_decision`` stores the approval or
  denial of a tool call that waits in a session another worker owns (or that
  nobody runs): a ``MetadataUpdated`` of the call's message that asks for the
  decision (``runtime._decisions.DECISION_KEY``). The owner, woken by its
  ``NOTIFY``, reloads the session and takes it; a session nobody runs that has
  one is picked up by a worker, as one with input is. The decision itself
  (``ApprovalDecided``, the tool run) is the owner's: a call runs at most once,
  where its session runs.

Every store call goes through the runtime's store thread (the store is not
thread-safe).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import random
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from runtime import (
    CorruptRow,
    Draft,
    LeaseLost,
    Message,
    SeqConflict,
    SessionState,
    Status,
    StoreError,
    TurnSettings,
    awaits_delivery,
)
from runtime.store import SessionInfo

from ._damage import resumable
from ._elsewhere import (
    delivers_nothing,
    stop_listening,
    store_decision,
    store_input,
    waits_for_a_person,
)
from ._errors import RuntimeStopped
from ._ids import Clock
from ._ownership import StoreBusy
from ._router import Router
from ._storage import StoreThread

__all__ = [
    "LeaseKeeper",
    "delivers_nothing",
    "stop_listening",
    "store_decision",
    "store_input",
    "waits_for_a_person",
]

log = logging.getLogger("amber.leases")

_INPUT_TRIES = 50
"""Tries to store an input (or a decision) for another owner before ``SeqConflict``
reaches the caller."""


class LeaseKeeper:
    """Takes, renews and gives back the leases of the sessions a runtime runs.

    Args:
        store: the runtime's store thread (its store is a ``PostgresStore``).
        router: the runtime's live-session table.
        owner: this worker's name in the lease rows (the runtime's runner id).
        clock: wall-clock time (leases expire by it).
        turn_settings: the runtime's, to store input for another owner.
        ttl: how long a lease lasts without renewal.
        poll: seconds between polls of the session list (the fallback for
            notifications that were lost).
        wake: load sessions nobody runs that have input waiting (a worker);
            False: run only the sessions this runtime is sent to.
        delivers: whether an adapter here delivers a message (the gateway's
            ``expects_delivery``); None: no adapter runs here, and a session whose only
            work is output not delivered yet is left for a runtime with adapters.
            Output no adapter here delivers is no work for this runtime.
        monotonic: seconds for when to renew and poll (``time.monotonic``).
        on_name_lost: called (on the keeper's thread) with a ``StoreBusy`` when another
            runtime took this one's name while its listening connection was down: the
            keeper has taken its last lease and stopped listening, and the runtime should
            stop (it must not return before the keeper's thread may be joined).
    """

    def __init__(
        self,
        *,
        store: StoreThread,
        router: Router,
        owner: str,
        clock: Clock,
        turn_settings: TurnSettings,
        ttl: float = 30.0,
        poll: float = 30.0,
        wake: bool = False,
        delivers: Callable[[Message], bool] | None = awaits_delivery,
        monotonic: Callable[[], float] = time.monotonic,
        on_name_lost: Callable[[StoreBusy], None] | None = None,
    ) -> None:
        self._store = store
        self._on_name_lost = on_name_lost
        # What the adapters here deliver: work for this runtime.
        self._delivers = delivers if delivers is not None else delivers_nothing
        self._delivers_any = delivers is not None
        self._router = router
        self._owner = owner
        self._clock = clock
        self._turn_settings = turn_settings
        self._ttl = timedelta(seconds=ttl)
        self._poll = poll
        self._wake = wake
        self._monotonic = monotonic
        self._next_renew = monotonic() + ttl / 3
        self._renewing = threading.Lock()
        self._stop = threading.Event()
        self._claims = threading.Lock()  # one claim at a time; none once stopping
        self._closed = False
        self._lost: set[str] = set()  # held leases that renewal found lost (writes refused)
        self._warned: set[str] = set()  # damaged sessions a poll logged (on the store thread)
        # Sessions whose load failed for damage, with their head then: not picked up again
        # while it is unchanged.
        self._damaged: dict[str, SessionInfo] = {}
        self._damage = threading.Lock()  # for ``_damaged`` (load failures come on actors' threads)
        self._thread = threading.Thread(target=self._loop, name="amber-leases", daemon=True)
        self._listener: Any = None
        self.taken = 0
        """Leases taken (for tests and monitoring)."""
        self.lost = 0
        """Leases found taken over by another worker."""

    # -- claiming ----------------------------------------------------------------------

    def _call(self, fn: Callable[[Any], Any]) -> Any:
        return self._store.call(fn).result(60.0)

    def ensure(self, session_id: str) -> bool:
        """Hold the session's lease (take it if it is free or expired); False if another
        worker holds it.

        Claims take turns (two pick-ups of one session take its lease once), and none
        is taken once ``stop`` began (it would never be renewed or given back).

        Raises:
            RuntimeStopped: the keeper is stopping.
        """
        with self._claims:
            if self._closed:
                raise RuntimeStopped(
                    f"The runtime is stopping; session {session_id!r} was not claimed. Send "
                    "to a runtime that runs (its input is stored for whoever owns the session)."
                )
            held = self._call(lambda s: s.held.get(session_id))
            if held is not None and session_id not in self._lost:
                return True
            if held is not None:  # lost to another worker: try again with a new lease
                self._call(functools.partial(_release, lease=held))
                self._lost.discard(session_id)
            now, ttl, owner = self._clock(), self._ttl, self._owner
            lease = self._call(lambda s: s.acquire(session_id, owner=owner, now=now, ttl=ttl))
            if lease is not None:
                # A fresh lease is renewed, whatever a renewal found of an older one.
                self._lost.discard(session_id)
        if lease is None:
            return False
        self.taken += 1
        log.info("took the lease of %s (token %d)", session_id, lease.token)
        return True

    def store_input(self, session_id: str, draft: Draft) -> Message:
        """Store an input for a session another worker owns (its ``NOTIFY`` wakes the owner).

        Each try appends on the head it read; a ``SeqConflict`` (the owner wrote meanwhile,
        as a running turn does many times a second) is tried again on the new head, after
        a short random pause so that the tries do not keep meeting the owner's writes.

        Raises:
            SeqConflict: the session kept changing for ``_INPUT_TRIES`` tries.
        """
        settings, clock = self._turn_settings, self._clock
        message: Message = self._retried(
            lambda s: store_input(s, session_id, draft, settings=settings, at=clock())
        )
        return message

    def store_decision(
        self, session_id: str, call_id: str, approved: bool, reason: str | None, by: str | None
    ) -> None:
        """Store the decision on a waiting tool call for the session's owner to take (its
        ``NOTIFY`` wakes the owner; a worker picks up a session nobody runs).

        Tried again on a ``SeqConflict`` as ``store_input`` is: each try reads the head
        again, so of two decisions racing on one call the second finds the first stored.

        Raises:
            NotAwaitingApproval: no call of that id waits, or a decision on it is stored.
            SeqConflict: the session kept changing for ``_INPUT_TRIES`` tries.
        """
        clock = self._clock
        self._retried(
            lambda s: store_decision(s, session_id, call_id, approved, reason, by, at=clock())
        )

    def _retried(self, fn: Callable[[Any], Any]) -> Any:
        """``fn(store)`` on the store thread, tried again on ``SeqConflict`` (the head moved)
        after a short random pause, so that the tries do not keep meeting the owner's writes."""
        for tries in range(1, _INPUT_TRIES):
            with contextlib.suppress(SeqConflict):
                return self._call(fn)
            time.sleep(random.uniform(0.0, 0.002 * min(tries, 25)))
        return self._call(fn)

    # -- the thread --------------------------------------------------------------------

    def start(self) -> None:
        """Start listening, renewing and (with ``wake``) picking up sessions.

        The listening connection holds this worker's name on the store for as long as it
        runs (``Listener.hold``): a lease is taken under the name, and an owner takes its
        own lease again, so two runtimes of one name would take each other's sessions
        over and over, each fencing off the other's writes.

        Raises:
            StoreBusy: another runtime runs sessions of the store under this name.
        """
        self._listener = self._call(lambda s: s.listener(others_only=True))
        if not self._listener.hold(self._owner):
            self._listener.close()
            self._listener = None
            where = self._call(lambda s: getattr(s, "schema", None))
            raise StoreBusy(
                f"Another runtime runs sessions of this store as {self._owner!r}"
                f"{f' (schema {where!r})' if where else ''}: two of one name would take each "
                "other's leases over and over. Give each worker its own --name (a Runtime its "
                "own runner=), or leave it out for a new one; if that runtime stopped or died, "
                "the name is free again once its database connection is gone."
            )
        self._router.claim = self.ensure  # no session is loaded here without its lease
        self._router.passivated = self._passivated
        self._router.unloadable = self._unloadable
        self._thread.start()
        if self._wake:
            self.poll_now()

    def close_intake(self) -> None:
        """Take no more leases (a stopping runtime): later claims raise ``RuntimeStopped``,
        and sessions with work waiting are left to other workers. The leases held are
        still renewed until ``stop``."""
        with self._claims:
            self._closed = True

    def stop(self) -> None:
        """Stop the thread and give every lease back (call before the store stops).

        From now on no claim is taken: a claim racing this either finished before (and
        its lease is given back here) or is refused."""
        self.close_intake()
        stop_listening(self._stop, self._thread, None, self._call)
        if self._listener is not None:  # read once the thread ended: a reconnect replaces it
            self._listener.close()
        try:
            self._call(lambda s: [s.release(lease) for lease in list(s.held.values())])
        except Exception:
            log.warning("could not give the leases back; they expire on their own")

    def _loop(self) -> None:
        next_poll = self._monotonic() + self._poll
        while not self._stop.is_set():
            wait = max(0.0, min(self._next_renew, next_poll) - self._monotonic())
            try:
                notified = self._listener.wait(wait)
            except StoreError:
                log.warning("lost the notification connection; reconnecting")
                notified = set()
                self._reconnect()
                if self._stop.is_set():  # stopping, or another runtime took the name
                    break
            try:
                if notified:
                    self._woken(notified)
                self._renew_if_due()
                if self._monotonic() >= next_poll:
                    next_poll = self._monotonic() + self._poll
                    self.poll_now()
            except Exception:
                log.exception("lease keeping failed; trying again")

    def _renew_if_due(self) -> None:
        """Renew the leases held if a third of the ttl passed since the last renewal; also
        called between pick-ups, which may take long (loads), so that none lapses meanwhile.
        A renewal already under way (another thread) is not waited for."""
        if self._monotonic() < self._next_renew or not self._renewing.acquire(blocking=False):
            return
        try:
            self._next_renew = self._monotonic() + self._ttl.total_seconds() / 3
            self._renew()
        finally:
            self._renewing.release()

    def _reconnect(self) -> None:
        """A new listening connection that holds this runtime's name again: the name's lock
        went with the old connection. If another runtime took the name meanwhile, this one
        stands down (``_name_taken``): two of one name take each other's leases."""
        try:
            self._listener.close()
            self._listener = self._call(lambda s: s.listener(others_only=True))
            held = self._listener.hold(self._owner)
        except Exception:
            # Not connected, or not holding the name: no wait goes on without it.
            self._listener.close()  # the next wait fails, and this is tried again
            self._stop.wait(1.0)
            return
        if not held:
            self._name_taken()

    def _name_taken(self) -> None:
        where = None
        with contextlib.suppress(Exception):  # only for the message
            where = self._call(lambda s: getattr(s, "schema", None))
        error = StoreBusy(
            f"Another runtime took the name {self._owner!r} on this store"
            f"{f' (schema {where!r})' if where else ''} while this one's connection to it was "
            "down; this one stopped, since two of one name would take each other's leases "
            "over and over. Give each worker its own --name (a Runtime its own runner=), or "
            "leave it out for a new one."
        )
        log.error("%s", error)
        self.close_intake()
        self._stop.set()  # the loop ends; ``stop`` gives the leases back
        if self._on_name_lost is not None:
            self._on_name_lost(error)

    def _woken(self, session_ids: set[str]) -> None:
        live = set(self._router.live_sessions())
        for session_id in sorted(session_ids):
            if session_id in live:
                self._refresh(session_id)
            elif self._wake:
                self._pick_up(session_id)
            self._renew_if_due()

    def poll_now(self) -> None:
        """Look for sessions with work waiting that nobody runs (``wake``), and release the
        leases of sessions that passivated."""
        live = set(self._router.live_sessions())
        held = dict(self._call(lambda s: s.held))
        for session_id, lease in held.items():
            if session_id not in live:
                self._router.unless_live(session_id, functools.partial(self._let_go, lease))
        if not self._wake:
            return
        # A damaged session is left out (logged once): it does not stop the others' pickup.
        for info in self._call(functools.partial(resumable, warned=self._warned)):
            if info.needs_runner and info.session_id not in live:
                self._pick_up(info.session_id)
                self._renew_if_due()

    def _passivated(self, session_id: str, *, announce: bool = True) -> None:
        """A session passivated: give its lease back at once (any runtime may then run it,
        to approve a tool call, say), unless it was loaded again meanwhile."""
        try:
            lease = self._call(lambda s: s.held.get(session_id))
            if lease is not None:
                let_go = functools.partial(self._let_go, lease, announce=announce)
                self._router.unless_live(session_id, let_go)
        except Exception:
            log.warning("could not give back the lease of %s; the next poll does", session_id,
                        exc_info=True)  # fmt: skip

    def _unloadable(self, session_id: str, error: Exception) -> None:
        """A session's load failed (its callers got ``error``): give its lease back, so it
        is not held (and renewed) here until a poll while no other worker may try it.

        Not announced: workers that all fail to load it (a damaged row) would hand it to
        each other as fast as they could. The others (and this one) try it at their next
        poll, or when input for it comes. A session damaged (``CorruptRow``) is
        remembered with its head: this worker picks it up again only once the head
        changed (input stored, a rebuild or a repair), not at every poll, each logging
        the load's warning again.
        """
        if isinstance(error, CorruptRow):
            try:
                head = self._call(lambda s: s.session(session_id) if session_id in s else None)
            except Exception:
                head = None  # unread: tried again at the next poll
            if head is not None:
                with self._damage:
                    self._damaged[session_id] = head
        self._passivated(session_id, announce=False)

    def _let_go(self, lease: Any, *, announce: bool = True) -> None:
        """Give back the lease of a session that is not live (under the router's lock, so no
        actor is made for it meanwhile)."""
        with self._claims:
            self._call(functools.partial(_release_unless_new, lease=lease, announce=announce))
            self._lost.discard(lease.session_id)

    def _pick_up(self, session_id: str) -> None:
        info = self._call(lambda s: s.session(session_id) if session_id in s else None)
        if info is None or not info.needs_runner:
            return
        with self._damage:
            if self._damaged.get(session_id) == info:
                return  # its load failed for damage on this head: the warning was logged
            self._damaged.pop(session_id, None)
        if (
            not self._delivers_any
            and info.active_turn_id is None
            and not info.counts.get(Status.PENDING_AGENT)
        ):
            return  # only output waits, and no adapter here would deliver it
        if (
            info.active_turn_id is not None
            and not info.counts.get(Status.PENDING_AGENT)
            and self._turn_settings.approval_timeout is None
            and waits_for_a_person(
                self._call(lambda s: s.load_state(session_id)),
                delivers=self._delivers,
            )
        ):
            return  # nothing to run until a decision or an input comes
        try:
            if not self.ensure(session_id):
                return
        except RuntimeStopped:
            return  # stopping: another worker picks it up
        try:
            self._router.load(session_id)
        except RuntimeStopped:
            # The router closed after the claim: give the lease back now (announced, so
            # another worker takes the session at once), not when the keeper stops.
            self._passivated(session_id)

    def _refresh(self, session_id: str) -> None:
        """A session that runs here got events from elsewhere: reload it (a busy one reloads
        in its own actor)."""
        proxy = self._router.live(session_id)
        if proxy is None:
            return
        try:
            state: SessionState = proxy.state_now().get(timeout=30.0)
            idle: bool = proxy.is_idle().get(timeout=30.0)
        except Exception:
            return
        stored = self._call(lambda s: s.session(session_id).seq)
        if stored <= state.seq:
            return
        log.info("session %s got input from elsewhere: reloading it", session_id)
        if idle:
            self._router.reload(session_id)
            return
        # Busy: the actor adopts the new head itself (its next write would meet a
        # SeqConflict and reload anyway), so the input is not left waiting for that write;
        # unless another worker took the session over (renewal stops it here).
        held = self._call(lambda s: (s.held.get(session_id), s.lease(session_id)))
        if held[0] is None or held[1] is None or held[0].token != held[1].token:
            return
        try:
            proxy.resync().get(timeout=60.0)
        except Exception:
            log.warning("session %s could not reload; it does at its next write", session_id,
                        exc_info=True)  # fmt: skip

    def _renew(self) -> None:
        """One renewal round: every lease held (but those known lost) renewed in one store
        call, with one expiry from this worker's clock; a lost one stops its session."""
        now, ttl, known_lost = self._clock(), self._ttl, set(self._lost)
        leases: list[Any] = []

        def round_(store: Any) -> dict[str, Any]:
            leases.extend(v for k, v in store.held.items() if k not in known_lost)
            return dict(store.renew_all(leases, now=now, ttl=ttl))

        try:
            outcomes = self._call(round_)
        except StoreError:
            for lease in leases:
                if now + ttl / 3 >= lease.expires_at:
                    log.warning("cannot renew the lease of %s before it expires; stopping it",
                                lease.session_id)  # fmt: skip
                    self._router.drop(lease.session_id)
            return
        for lease in leases:
            if isinstance(outcomes.get(lease.session_id), LeaseLost):
                self._lost_to_another(lease)

    def _lost_to_another(self, lease: Any) -> None:
        """Renewal found ``lease`` taken over: mark it lost and stop its session here (one
        log line), unless it was given back and taken again meanwhile."""
        session_id = lease.session_id
        with self._claims:
            if self._call(functools.partial(_held, session_id=session_id)) != lease:
                return  # given back and taken again meanwhile: the new one is fine
            self._lost.add(session_id)  # its store keeps refusing writes
        self.lost += 1
        self._router.drop(session_id, lost=True)
        log.warning("lost the lease of %s to another worker (%s); stopped the session "
                    "here, nothing more of it is stored here", session_id,
                    self._holder(session_id))  # fmt: skip

    def _holder(self, session_id: str) -> str:
        """Who holds the session's lease now, for the log."""
        try:
            now = self._call(lambda s: s.lease(session_id))
        except Exception:
            return "its new holder could not be read"
        if now is None:
            return "its lease row is gone"
        return f"{now.owner!r} holds it now with token {now.token}"


def _release(store: Any, *, lease: Any) -> Any:
    return store.release(lease)


def _held(store: Any, *, session_id: str) -> Any:
    """The lease ``store`` holds for ``session_id`` (None: none)."""
    return store.held.get(session_id)


def _release_unless_new(store: Any, *, lease: Any, announce: bool = True) -> Any:
    """Release ``lease`` if the store still holds it (not one a claim took meanwhile)."""
    if store.held.get(lease.session_id) != lease:
        return False
    return store.release(lease, announce=announce)
