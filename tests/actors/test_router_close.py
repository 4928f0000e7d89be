"""Router.close stops every session actor even when one does not stop in time (issue 15).

pykka's actor threads are not daemon threads: an actor left running keeps the
process from exiting. A session actor that timed out used to raise
``pykka.Timeout`` out of ``Router.close`` (and so out of ``Runtime.stop``)
before the other actors and threads were stopped.
"""

from __future__ import annotations

from typing import Any

import pykka

from actors._router import Router, _Live


class _Done:
    def get(self, timeout: float | None = None) -> None:
        return None


class _Proxy:
    def shutdown(self) -> _Done:
        return _Done()


class _Ref:
    def __init__(self, stuck: bool) -> None:
        self.stuck = stuck
        self.stopped = False

    def stop(self, block: bool = True, timeout: float | None = None) -> Any:
        if self.stuck:
            raise pykka.Timeout("the actor did not stop")
        self.stopped = True
        return True


def test_a_stuck_session_does_not_stop_the_others_from_stopping() -> None:
    router = Router()
    stuck, fine = _Ref(stuck=True), _Ref(stuck=False)
    router._live["a"] = _Live(ref=stuck, proxy=_Proxy())  # type: ignore[arg-type]
    router._live["b"] = _Live(ref=fine, proxy=_Proxy())  # type: ignore[arg-type]
    router.close("stopped", timeout=0.01)  # no pykka.Timeout escapes
    assert fine.stopped
    assert router._live == {}
