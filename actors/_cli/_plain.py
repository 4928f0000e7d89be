"""Printing rich ``Text`` on a stdout that is not a terminal, without rich's console.

Piped or redirected, ``stdout_console()`` prints a ``Text`` as its plain characters:
no styles, no wrapping (``soft_wrap``). Importing ``rich.console`` and making a
``Console`` costs more than ``amber show`` spends on everything it prints at an early
seq, so ``PlainConsole`` writes those same characters itself and hands anything else
(a boxed table, a JSON tree) to a real console, made when first needed. A text with a
tab (rich expands it to cells), or a console width of 0 (``COLUMNS=0``), goes through
rich too. A table without a box (every table of the CLI) is written by ``plain_table``
instead: rich would lay it out in the console's width, 80 columns in a pipe, cutting
its cells over several lines.
``plain_width`` is rich's width for a console that is not a terminal. A property test
pins both to rich's own output. ``print_parts`` cuts one-line texts only to a width
the user set (``set_width``: ``$COLUMNS``): piped, a line is whole, so that grep finds
it, as ``timeline``'s are; with ``--full`` it is never cut.
"""

from __future__ import annotations

import builtins
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console, RenderableType

__all__ = [
    "PlainConsole",
    "plain_table",
    "plain_width",
    "plain_works",
    "print_table",
    "set_width",
]


def plain_works() -> bool:
    """Whether ``PlainConsole`` prints what rich would here: not on Windows (rich's legacy
    console there changes the width) and not inside IPython or Jupyter (rich renders for
    the notebook). The caller checks that stdout is not a terminal (``plain_stdout``)."""
    return sys.platform != "win32" and not hasattr(builtins, "get_ipython")


def plain_width() -> int:
    """The width rich's ``Console()`` reports when stdout is not a terminal: ``$COLUMNS``
    if it is a number, else the size of the first of stdin, stdout and stderr that is a
    terminal, else 80 (``Console.size``)."""
    columns = os.environ.get("COLUMNS")
    if columns is not None and columns.isdigit():
        return int(columns)
    width = None
    for descriptor in (0, 1, 2):
        try:
            width, _ = os.get_terminal_size(descriptor)
        except (AttributeError, ValueError, OSError):  # not a terminal
            continue
        break
    return width or 80


def set_width() -> int | None:
    """The width the user set for a stdout that is not a terminal: ``$COLUMNS`` if it is
    a number (as ``plain_width`` reads it), else None (the size of a terminal on stdin or
    stderr, or rich's 80, is no reason to cut what goes to a pipe or a file)."""
    columns = os.environ.get("COLUMNS")
    return int(columns) if columns is not None and columns.isdigit() else None


class PlainConsole:
    """The part of rich's ``Console`` that ``amber show`` uses, for a stdout that is not a
    terminal (``plain_stdout`` and ``plain_works``): ``print`` writes a ``Text`` as rich
    would (module docstring); anything else goes to the console ``fallback()`` makes then
    (``stdout_console``).
    """

    is_terminal = False
    """Never a terminal (the caller checked)."""

    def __init__(self, fallback: Callable[[], Console]) -> None:
        self._fallback = fallback
        self._width: int | None = None
        self._rich: Console | None = None

    @property
    def width(self) -> int:
        """rich's width for this stdout (read once)."""
        if self._width is None:
            self._width = plain_width()
        return self._width

    def print(self, renderable: RenderableType | None = None) -> None:
        """Print ``renderable`` (a blank line without one) and flush, as ``Console.print``."""
        from rich.text import Text

        width = self.width
        if width < 1:  # COLUMNS=0: rich's own rules for a console too narrow for anything
            pass
        elif renderable is None:
            self._write("\n")
            return
        elif isinstance(renderable, Text) and "\t" not in renderable.plain:
            self._write(renderable.plain + "\n")
            return
        elif (table := plain_table(renderable)) is not None:
            self._write(table)
            return
        if self._rich is None:
            self._rich = self._fallback()
        if renderable is None:
            self._rich.print()
        else:
            self._rich.print(renderable)

    @staticmethod
    def _write(text: str) -> None:
        stream = sys.stdout
        if stream is None:  # started without a stdout: rich writes to nothing too
            return
        try:
            stream.write(text)
        except UnicodeEncodeError as error:
            error.reason = (
                f"{error.reason}\n*** You may need to add PYTHONIOENCODING=utf-8 to your "
                "environment ***"
            )
            raise
        stream.flush()


def plain_table(renderable: object) -> str | None:
    """A rich ``Table`` of texts without a box (the CLI's) as plain lines for a stdout that
    is not a terminal, or None for anything else (a box, a cell that is not a text, a tab).

    rich lays a table out in the console's width (80 columns in a pipe): it cuts the cells
    of a long row over several lines and pads every line with spaces. Here each column is
    as wide as its widest line, two spaces apart (as ``box=None`` tables are on a
    terminal); a cell's text is whole, on the lines it has itself, the further ones
    starting in its column; no line ends in spaces. The title, if any, comes first.
    """
    # A table was made by code that imported rich.table: without it (most views print
    # texts only) this is no table, and importing it to say so would cost ~6 ms.
    if "rich.table" not in sys.modules:
        return None
    from rich.cells import cell_len
    from rich.table import Table
    from rich.text import Text

    if not isinstance(renderable, Table) or renderable.box is not None:
        return None  # a boxed table is drawn by rich

    columns = renderable.columns
    cells: list[list[list[str]]] = []  # column, row, line
    for column in columns:
        texts = [column.header] if renderable.show_header else []
        texts += list(column.cells)
        column_cells = []
        for text in texts:
            plain = (
                text if isinstance(text, str) else text.plain if isinstance(text, Text) else None
            )
            if plain is None or "\t" in plain:
                return None
            column_cells.append(plain.split("\n"))
        cells.append(column_cells)
    widths = [max((cell_len(line) for cell in col for line in cell), default=0) for col in cells]
    out: list[str] = []
    if renderable.title is not None:
        title = renderable.title
        out.append(title if isinstance(title, str) else str(getattr(title, "plain", title)))
    last = len(columns) - 1
    for row in range(len(cells[0]) if cells else 0):
        height = max(len(col[row]) for col in cells)
        for index in range(height):
            pieces = []
            for number, (column, col, width) in enumerate(zip(columns, cells, widths, strict=True)):
                line = col[row][index] if index < len(col[row]) else ""
                pad = " " * (width - cell_len(line))
                if column.justify == "right":
                    pieces.append(pad + line)
                elif number < last:
                    pieces.append(line + pad)
                else:
                    pieces.append(line)
            out.append("  ".join(pieces).rstrip())
    return "".join(line + "\n" for line in out)


def print_table(console: Console | PlainConsole, table: RenderableType) -> None:
    """Print ``table`` on ``console``: laid out by rich on a terminal; else, a table of
    texts as ``plain_table`` writes it (anything else as rich prints it)."""
    if not console.is_terminal and (text := plain_table(table)) is not None:
        PlainConsole._write(text)
        return
    console.print(table)
