"""``command_line``: the ``amber`` commands Amber prints for the user to run next.

A hint is only worth printing if pasting it into a shell runs what it says: every
word is quoted for a POSIX shell (``shell_line``), and when a positional argument (a
session id, a negative seq) starts with ``-``, the options come first and the
arguments after ``--``, so that click does not read the argument as an option.
Commands that act on a store name it with ``--db``: pasted, a hint acts on the store the
user passed, never on ``./amber.db`` or ``$AMBER_DB``. The store's own errors (the
``runtime`` knows no CLI) suggest ``'amber recover --rebuild'``; ``name_store`` adds the
``--db`` of the command that printed them.

A command inside a sentence is set in quotes by ``quoted``, and only by it: in single
quotes, as ever, when it holds none (every word plain: ``'amber check --db
amber.db'``), else in double quotes (``"amber check --db 'my store.db'"``). A quoted word
writes a ``'`` as ``'\\''`` and a ``"`` as ``\\"`` (outside its single quotes), so the
command in double quotes holds no ``"`` that is not escaped: its quotes end where it ends,
for the eye and for a program that looks for the closing one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

__all__ = ["command_line", "name_store", "quoted", "shell_line", "shell_word"]

_PLAIN = re.compile(r"[\w@%+=:,./-]+", re.ASCII)
"""A word a POSIX shell reads as it is (``shlex.quote``'s safe characters)."""


def shell_word(word: object) -> str:
    """``word`` quoted for a POSIX shell: as it is when plain, else in single quotes, with
    a ``'`` written ``'\\''`` and a ``"`` written ``'\\"'`` (so no ``"`` but an escaped one).

    >>> shell_word("amber.db"), shell_word("my store.db"), shell_word("it's")
    ('amber.db', "'my store.db'", "'it'\\\\''s'")
    >>> print(shell_word('say "hi"'), shell_word("'"), shell_word(""))
    'say '\\"'hi'\\" \\' ''
    """
    text = str(word)
    if not text:
        return "''"
    if _PLAIN.fullmatch(text):
        return text
    inner = text.replace("'", "'\\''").replace('"', "'\\\"'")
    # a word that starts or ends with a quote would start or end with an empty '' too
    return f"'{inner}'".removeprefix("''").removesuffix("''")


def shell_line(words: Iterable[object]) -> str:
    """``words`` as one POSIX shell command line, each quoted by ``shell_word``.

    >>> shell_line(["mkdir", "-p", "my stores"])
    "mkdir -p 'my stores'"
    """
    return " ".join(shell_word(word) for word in words)


def quoted(line: str) -> str:
    """The command ``line`` (from ``shell_line``) set in quotes inside a sentence: in single
    quotes when it holds none, else in double quotes, which ``shell_line`` never writes
    unescaped: the quotes end where the command does, and it pastes as it is.

    >>> quoted("amber check --db amber.db")
    "'amber check --db amber.db'"
    >>> quoted("amber check --db 'my store.db'")
    '"amber check --db \\'my store.db\\'"'
    """
    return f"'{line}'" if "'" not in line else f'"{line}"'


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
    return shell_line(words)


_STORE_HINT = re.compile(r"'amber (recover --rebuild)'")
"""The command the store's errors suggest (``runtime.store``), quoted as they write it."""


def name_store(message: str, db: str | None) -> str:
    """``message`` (a store's error) with each command it suggests naming ``db`` with
    ``--db``, set in quotes by ``quoted``; as it is when ``db`` is None.

    >>> name_store("Rebuild it with 'amber recover --rebuild'.", "other.db")
    "Rebuild it with 'amber recover --rebuild --db other.db'."
    >>> print(name_store("Rebuild it with 'amber recover --rebuild'.", "my store.db"))
    Rebuild it with "amber recover --rebuild --db 'my store.db'".
    """
    if db is None:
        return message

    def named(match: re.Match[str]) -> str:
        words = match.group(1).split()
        return quoted(command_line(words[0], options=(*words[1:], "--db", db)))

    return _STORE_HINT.sub(named, message)
