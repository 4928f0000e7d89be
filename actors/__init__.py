"""Amber's actors and effects: pykka actors own state, trio runs effects.

The runtime system, gateway, session, tool and adapter actors, model providers
and the ``amber`` CLI live here. They build on the pure core in ``runtime``.
"""

__all__: list[str] = []
