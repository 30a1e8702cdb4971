"""Rank-tagged logging: every line says which rank wrote it."""

import logging
import sys

logger = logging.getLogger("iris")
_tag = {"rank": "-", "world": "-"}


class _RankFormatter(logging.Formatter):
    def format(self, record):
        return f"[Iris] [{_tag['rank']}/{_tag['world']}] {super().format(record)}"


if not logger.handlers:
    _handler = logging.StreamHandler(sys.stderr)
    _handler.setFormatter(_RankFormatter("%(levelname)s %(message)s"))
    logger.addHandler(_handler)
    logger.setLevel(logging.WARNING)
    logger.propagate = False


def set_rank(rank, world):
    _tag["rank"], _tag["world"] = rank, world


def set_level(level):
    """`iris.logging.set_level("INFO")` shows progress messages; WARNING by default."""
    logger.setLevel(level)
