"""Print the path of the newest Python 3 on this machine, if it is newer than this one.

Looks at pyenv's versions and ``python3.N`` on PATH; prints nothing when none
is newer (``.ci/run`` then says so and skips the second run).
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys


def version(python: str) -> tuple[int, int] | None:
    """The (major, minor) of ``python``, or None if it does not run."""
    try:
        out = subprocess.run(
            [python, "-c", "import sys; print(*sys.version_info[:2])"],
            capture_output=True, text=True, timeout=60, check=True,
        ).stdout.split()  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return (int(out[0]), int(out[1])) if len(out) == 2 else None


def main() -> None:
    """Print the newest Python newer than the running one (or nothing)."""
    candidates = set(glob.glob(os.path.expanduser("~/.pyenv/versions/3.*/bin/python3")))
    for minor in range(sys.version_info[1] + 1, 30):
        found = shutil.which(f"python3.{minor}")
        if found:
            candidates.add(found)
    best: tuple[tuple[int, int], str] | None = None
    for candidate in sorted(candidates):
        found_version = version(candidate)
        if found_version is None or found_version <= sys.version_info[:2]:
            continue
        if best is None or found_version > best[0]:
            best = (found_version, candidate)
    if best is not None:
        print(best[1])


if __name__ == "__main__":
    main()
