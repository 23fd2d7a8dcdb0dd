"""Terminal output with rich: a progress bar with ETA and coloured tables on a terminal or in
Jupyter; the plain line-per-case progress and padded text tables everywhere else (CI logs, pipes).

rich's Console honours NO_COLOR (layout kept, colour dropped) and TERM=dumb.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.progress import Progress as RichBar
from rich.table import Table
from rich.text import Text

from arraybench.execution.parent import Progress
from arraybench.output.formats import text_table
from arraybench.results.record import FAILED, CaseRecord
from arraybench.units import format_seconds

# What a cell or a status says, and the colour it gets: failures never look like results.
STYLES = (("WRONG", "bold red"), ("CRASHED", "bold red"), ("ERROR", "bold red"), ("TIMEOUT", "bold red"),
          ("broken", "bold red"), ("slower", "red"), ("(noisy)", "yellow"), ("too noisy", "yellow"),
          ("faster", "green"), ("unavailable", "dim"), ("unsupported", "dim"))


def styled(cell: str) -> Text:
    for word, style in STYLES:
        if word in cell:
            return Text(cell, style=style)
    return Text(cell)


def rich_console(stream: TextIO) -> Console | None:
    """A rich Console for `stream` where it is a terminal or a notebook; None for a plain layout."""
    console = Console(file=stream)
    return console if console.is_terminal or console.is_jupyter else None


class ProgressBar(Progress):
    """rich's progress bar over a run: done/total (cases, or processes as Progress counts them),
    elapsed, ETA, the last result."""

    def __init__(self, total: int, console: Console) -> None:
        super().__init__(total, console.file)
        self.bar = RichBar(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                           TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                           TextColumn("{task.fields[last]}"), console=console, transient=False)
        self.task = self.bar.add_task("cases", total=total, last="")
        self.bar.start()

    def show(self, what: str, rec: CaseRecord) -> None:
        status = rec.status
        if status in ("ok", "wrong"):
            shown = f"{format_seconds(rec.median_s)}" + (" WRONG" if status == "wrong" else "")
        else:
            shown = status.upper() if status in FAILED else status
        style = "red" if status in FAILED else "green" if status == "ok" else "dim"
        unit, done = ("cases", self.done) if self.processes == 1 and not self.extra else \
            ("processes", self.processes_done)
        total = self.total if unit == "cases" else self.expected()
        self.bar.update(self.task, description=unit, completed=done, total=total,
                        last=f"{what}: [{style}]{shown}[/]")
        if self.bar.finished:
            self.close()

    def close(self) -> None:
        """Stop redrawing (at the end, and on Ctrl-C or SIGTERM before the resume hint is printed)."""
        self.bar.stop()


@contextmanager
def progress_display(stream: TextIO | None = None) -> Iterator[Callable[[int], Progress]]:
    """An `on_start` for session.execute: a progress display for each run started in the block.

    Every rich bar is stopped when the block ends, however it ends: a run with nothing left to
    do never finishes its bar, and after Ctrl-C no bar may redraw over the resume hint.
    """
    bars: list[Progress] = []

    def on_start(total: int) -> Progress:
        bars.append(progress(total, stream))
        return bars[-1]

    try:
        yield on_start
    finally:
        for bar in bars:
            if isinstance(bar, ProgressBar):
                bar.close()


def progress(total: int, stream: TextIO | None = None) -> Progress:
    """The progress display for a run of `total` cases on `stream` (stderr by default)."""
    stream = stream or sys.stderr
    console = rich_console(stream)
    return ProgressBar(total, console) if console is not None else Progress(total, stream)


def table_renderer(stream: TextIO | None = None) -> Callable[[list[str], list[list[str]]], str]:
    """A function (header, rows) -> text for `stream`: rich and coloured by what each cell says
    (slower red, faster green, too noisy yellow) on a terminal; the padded text table elsewhere."""
    console = rich_console(stream or sys.stdout)
    if console is None:
        return text_table

    def render(header: list[str], rows: list[list[str]]) -> str:
        table = Table(*header, header_style="bold")
        for row in rows:
            table.add_row(*(styled(c) for c in row))
        with console.capture() as captured:
            console.print(table)
        return captured.get().rstrip("\n")

    return render


def print_table(header: list[str], rows: list[list[str]], title: str | None = None,
                stream: TextIO | None = None) -> None:
    """A table: rich, coloured by what each cell says, on a terminal; padded text elsewhere."""
    stream = stream or sys.stdout
    console = rich_console(stream)
    if console is None:
        print("\n".join(filter(None, [title, text_table(header, rows)])), file=stream)
        return
    table = Table(*header, title=title, title_justify="left", header_style="bold")
    for row in rows:
        table.add_row(*(styled(c) for c in row))
    console.print(table)
