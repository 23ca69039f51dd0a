"""The values of the command line's number options, checked as argparse reads them: a deadline
of 0, -5 or nan, a concurrency of -1 or an output cap of 0 is a usage error naming the option
(exit 2), not a server that times out every call, a traceback, or empty results. And
``--allow``'s: one name each, as a list written the way ``--locked`` takes it
(``--allow a,b``) is a usage error that shows the repetition, not "unknown permission"."""

from __future__ import annotations

import argparse
import math
import os


def seconds(text: str) -> float:
    """A duration above 0 seconds, finite (``--timeout``)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a number of seconds above 0, not {text!r}")
    return value


def positive(text: str) -> int:
    """A whole number of 1 or more (``--max-concurrency``, ``--max-output``)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of 1 or more, not {text!r}")
    return value


def one_allowed(text: str) -> str:
    """One ``--allow`` entry: ``NAME[=PATTERN]``, its name without a comma (no tool,
    capability or glob has one) unless it is a path that exists (a manifest's folder)."""
    name = text.partition("=")[0]
    if "," in name and not os.path.exists(name.strip()):
        names = [n.strip() for n in name.split(",") if n.strip()]
        repeated = " ".join(f"--allow {n}" for n in names)
        raise argparse.ArgumentTypeError(
            f"one tool or capability per --allow, not the list {text!r}: repeat it ({repeated})"
        )
    return text


__all__ = ["one_allowed", "positive", "seconds"]
