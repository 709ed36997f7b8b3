"""argparse pieces for the commands that are not absl apps (the benchmarks, the report,
data.describe and data.show): a bad command line ends in one `error:` line, not a usage
block, and counts are checked as they are parsed."""

from __future__ import annotations

import argparse


class OneLineArgumentParser(argparse.ArgumentParser):
    """argparse whose errors are one `error: ... (see --help)` line."""

    def error(self, message: str):
        raise SystemExit(f"error: {message} (see --help)")


def positive_int(text: str) -> int:
    """An argparse type for counts (steps, seeds, images): an integer >= 1."""
    return _int_at_least(text, 1)


def non_negative_int(text: str) -> int:
    """An argparse type for counts where 0 means "none" or "the default"."""
    return _int_at_least(text, 0)


def _int_at_least(text: str, least: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"must be an integer >= {least}, got {value}")
    return value
