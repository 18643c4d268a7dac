"""The progress display of a study run: a live bar on a terminal, periodic plain lines, one log line per unit,
or nothing (:func:`make_progress`)."""

from __future__ import annotations

import sys
import time
from typing import Any

import numpy as np

from odeval.bench.store import UnitResult

__all__ = ["Progress", "make_progress"]


def _duration(seconds: float) -> str:
    """Compact duration: 12s, 3m05s, 1h02m."""
    if not np.isfinite(seconds):
        return "?"
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


class Progress:
    """What the driver reports to; this base class prints nothing (``progress="none"``)."""

    def __init__(self, total: int, already: int, stream: Any = None, width: int = 80):
        self.total, self.already = total, already
        self.computed = 0
        self.stream = sys.stderr if stream is None else stream
        self.width = width
        self.current: dict[str, None] = {}  # variants being computed, in start order
        self.t0 = time.perf_counter()

    # events
    def started(self, name: str) -> None:
        self.current[name] = None

    def done_with(self, name: str) -> None:
        self.current.pop(name, None)

    def finished(self, res: UnitResult) -> None:
        self.computed += 1

    # figures
    @property
    def done(self) -> int:
        return self.already + self.computed

    def rate(self) -> float:
        return self.computed / max(time.perf_counter() - self.t0, 1e-9)

    def eta(self) -> float:
        r = self.rate()
        return (self.total - self.done) / r if r > 0 else float("inf")

    def names(self, width: int) -> str:
        text = ", ".join(self.current)
        return text if len(text) <= width else text[: max(width - 1, 0)] + "…"

    def say(self, text: str) -> None:
        print(text, file=self.stream, flush=True)

    def opening(self) -> str | None:
        todo = self.total - self.already
        if self.already:
            return (f"resuming: {self.already} of {self.total} units are already in the store and are skipped; "
                    f"{todo} to compute")
        return None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class _LogProgress(Progress):
    """One line per finished unit (``--quiet``)."""

    def __enter__(self) -> Progress:
        if self.opening():
            self.say(self.opening())
        return self

    def finished(self, res: UnitResult) -> None:
        super().finished(res)
        tail = "" if res.status == "ok" else f"  ERROR {res.error}"
        self.say(f"[{self.done}/{self.total}] {res.dataset['name']} {res.method} {res.params} {res.status} "
                 f"({res.runtime_s:.2f}s){tail}")


class _PlainProgress(Progress):
    """Periodic plain lines (output not a terminal): count, percentage, rate, ETA; datasets on the next line."""

    def __init__(self, *args: Any, interval: float = 10.0, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.interval = interval
        self.last = -float("inf")

    def __enter__(self) -> Progress:
        if self.opening():
            self.say(self.opening())
        self.say(f"{self.total - self.already} units to compute")
        return self

    def line(self) -> str:
        pct = 100.0 * self.done / max(self.total, 1)
        return (f"units {self.done}/{self.total} ({pct:.0f}%)  {self.rate():.2f} units/s  "
                f"ETA {_duration(self.eta())}")

    def finished(self, res: UnitResult) -> None:
        super().finished(res)
        now = time.perf_counter()
        if now - self.last >= self.interval or self.done == self.total:
            self.last = now
            self.say(self.line())
            if self.current and self.done < self.total:
                self.say("  now: " + self.names(self.width - 7))

    def __exit__(self, *exc: object) -> None:
        if self.computed and time.perf_counter() - self.last > 0 and self.done != self.total:
            self.say(self.line())


class _RichProgress(Progress):
    """A live bar on a terminal (fits 80 columns) with the datasets being computed on the line below."""

    def __enter__(self) -> Progress:
        from rich.console import Console, Group
        from rich.live import Live
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn
        from rich.progress import Progress as Bar

        self.console = Console(file=self.stream)
        if self.opening():
            self.console.print(self.opening(), highlight=False)
        self.bar = Bar(TextColumn("units"), BarColumn(bar_width=28), MofNCompleteColumn(),
                       TextColumn("{task.fields[rate]}"), TextColumn("ETA"), TimeRemainingColumn(),
                       console=self.console)
        self.task = self.bar.add_task("units", total=self.total, completed=self.already, rate="")
        self._group = Group
        self.live = Live(self._renderable(), console=self.console, refresh_per_second=4, transient=False)
        self.live.__enter__()
        return self

    def _renderable(self) -> Any:
        from rich.text import Text

        width = min(self.console.width, self.width)
        names = Text("  now: " + self.names(width - 7) if self.current else "", no_wrap=True, overflow="ellipsis")
        return self._group(self.bar, names)

    def _show(self, force: bool = False) -> None:
        now = time.perf_counter()
        if force or now - getattr(self, "_shown", -1.0) >= 0.1:  # at most ten redraws a second
            self._shown = now
            self.live.update(self._renderable(), refresh=True)

    def started(self, name: str) -> None:
        super().started(name)
        self._show()

    def done_with(self, name: str) -> None:
        super().done_with(name)
        self._show()

    def finished(self, res: UnitResult) -> None:
        super().finished(res)
        self.bar.update(self.task, advance=1, rate=f"{self.rate():.1f}/s")
        self._show()

    def __exit__(self, *exc: object) -> None:
        self._show(force=True)
        self.live.__exit__(None, None, None)


def make_progress(mode: str, total: int, already: int, stream: Any = None) -> Progress:
    """The progress display of ``mode`` ("rich": a live bar on a terminal, else periodic lines; "log"; "none")."""
    stream = sys.stderr if stream is None else stream
    if mode == "none":
        return Progress(total, already, stream)
    if mode == "log":
        return _LogProgress(total, already, stream)
    if mode != "rich":
        raise ValueError(f"progress must be 'rich', 'log' or 'none', got {mode!r}")
    isatty = getattr(stream, "isatty", None)
    if isatty is not None and isatty():
        return _RichProgress(total, already, stream)
    return _PlainProgress(total, already, stream)
