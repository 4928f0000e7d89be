"""``command_line``: the ``amber`` commands Amber prints for the user to run next.

A hint is only worth printing if pasting it into a shell runs what it says: every
word is quoted for a POSIX shell (``shlex``), and when a positional argument (a
session id, a negative seq) starts with ``-``, the options come first and the
arguments after ``--``, so that click does not read the argument as an option.
Commands that act on a store name it with ``--db``: pasted, a hint acts on the store the
user passed, never on ``./amber.db`` or ``$AMBER_DB``. The store's own errors (the
``runtime`` knows no CLI) suggest ``'amber recover --rebuild'``; ``name_store`` adds the
``--db`` of the command that printed them.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

__all__ = ["command_line", "name_store"]


def command_line(command: str, *arguments: object, options: Sequence[object] = ()) -> str:
    """The shell command line ``amber COMMAND ARGUMENTS OPTIONS``, quoted.

    Args:
        command: the command's words (``"timeline"``, ``"recover"``).
        arguments: its positional arguments (session ids, seqs, files).
        options: option words, names and values in order (``("--at", 5, "--db", db)``);
            a value may start with ``-`` (click takes the word after an option that
            needs one as its value).

    >>> command_line("show", "-odd id", options=("--db", "my store.db"))
    "amber show --db 'my store.db' -- '-odd id'"
    >>> command_line("diff", "demo", 3, 4)
    'amber diff demo 3 4'
    """
    words = ["amber", *command.split()]
    positional = [str(argument) for argument in arguments]
    flags = [str(option) for option in options]
    if any(word.startswith("-") for word in positional):
        words += [*flags, "--", *positional]
    else:
        words += [*positional, *flags]
    return shlex.join(words)


_STORE_HINT = re.compile(r"'amber (recover --rebuild)'")
"""The command the store's errors suggest (``runtime.store``), quoted as they write it."""


def name_store(message: str, db: str | None) -> str:
    """``message`` (a store's error) with each command it suggests naming ``db`` with
    ``--db``, quoted as ``command_line`` quotes it; as it is when ``db`` is None.

    >>> name_store("Rebuild it with 'amber recover --rebuild'.", "other.db")
    "Rebuild it with 'amber recover --rebuild --db other.db'."
    """
    if db is None:
        return message

    def named(match: re.Match[str]) -> str:
        words = match.group(1).split()
        return f"'{command_line(words[0], options=(*words[1:], '--db', db))}'"

    return _STORE_HINT.sub(named, message)
