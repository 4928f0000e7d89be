"""The ``amber`` console script.

The full command set (demo, chat, time travel) arrives with the CLI; today the
script reports its version and the core's event vocabulary.
"""

from __future__ import annotations

import argparse
from importlib.metadata import PackageNotFoundError, version


def _version() -> str:
    try:
        return version("amber")
    except PackageNotFoundError:  # running from a source tree that is not installed
        return "(not installed)"


def main(argv: list[str] | None = None) -> int:
    """Run the ``amber`` command line."""
    parser = argparse.ArgumentParser(
        prog="amber",
        description="Amber: an immutable-state actor runtime for LLM agent sessions.",
    )
    parser.add_argument("--version", action="version", version=f"amber {_version()}")
    parser.add_argument(
        "command",
        nargs="?",
        choices=["events"],
        help="events: list the event kinds the core applies",
    )
    args = parser.parse_args(argv)
    if args.command == "events":
        from runtime import EVENT_TYPES

        for kind, cls in EVENT_TYPES.items():
            print(f"{kind:18} {(cls.__doc__ or '').splitlines()[0]}")
        return 0
    parser.print_help()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
