"""The kit's one requirement beyond Amber's own: Hypothesis (the ``testing`` extra).

Imported first by ``runtime.testing``, so that a missing Hypothesis is an
``ImportError`` that says what to install, not a bare ``No module named
'hypothesis'`` from deep inside the kit.
"""

from __future__ import annotations

try:
    import hypothesis  # noqa: F401
except ImportError as exc:
    raise ImportError(
        f"runtime.testing (Amber's testing kit) needs Hypothesis ({exc}); install the testing "
        "extra with: python3 -m pip install '.[testing]' in your Amber checkout "
        "('amber[testing]' where Amber comes from a package index).",
        name="hypothesis",
    ) from exc
