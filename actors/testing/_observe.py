"""Watching a runtime from outside: what adapters were shown and what they reported.

``ObservedRuntime`` is a ``Runtime`` whose gateway records every update it
fans out and every delivery each adapter reports (each adapter gets its own
sink, so reports are told apart), in a ``runtime.testing.DeliveryLedger``
that checks the delivery contract.
"""

from __future__ import annotations

from typing import Any

import pykka

from runtime import ChannelKind, Status, Update
from runtime.testing import DeliveryLedger, DeliveryReport

from .._adapter import DeliverySink
from .._gateway import Gateway
from .._runtime import Runtime

__all__ = ["ObservedRuntime"]


class _Sink:
    """One adapter's delivery sink: records, then forwards to the router."""

    def __init__(self, sink: DeliverySink, ledger: DeliveryLedger, report: dict[str, Any]) -> None:
        self._sink = sink
        self._ledger = ledger
        self._report = report

    def delivered(self, session_id: str, message_id: str, expected: Status) -> None:
        self._ledger.reported(
            DeliveryReport(
                session_id=session_id, message_id=message_id, expected=expected, **self._report
            )
        )
        self._sink.delivered(session_id, message_id, expected)


class _ObservedGateway(Gateway):
    def __init__(self, sink: DeliverySink, ledger: DeliveryLedger, generation: int) -> None:
        super().__init__(sink)
        self._ledger = ledger
        self._generation = generation

    def sink_for(self, ref: pykka.ActorRef[Any]) -> DeliverySink:
        proxy = ref.proxy()
        platform = proxy.platform.get(timeout=10)
        kind = ChannelKind(proxy.kind.get(timeout=10))
        label = f"{ref.actor_class.__name__}({platform!r}, run {self._generation})"
        report = {"adapter": label, "platform": platform, "kind": kind}
        return _Sink(super().sink_for(ref), self._ledger, report)

    def publish(self, update: Update) -> None:
        self._ledger.announced(update)
        super().publish(update)


class ObservedRuntime(Runtime):
    """A ``Runtime`` whose gateway records announcements and each adapter's reports.

    Args:
        ledger: where deliveries are recorded.
        generation: which (re)start this is, to tell adapters of two runs apart.
        **kwargs: as for ``Runtime``.
    """

    def __init__(self, *, ledger: DeliveryLedger, generation: int = 0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.gateway = _ObservedGateway(self.router, ledger, generation)
