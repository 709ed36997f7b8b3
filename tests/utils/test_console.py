"""The run's file log when its disk is full."""

import logging as python_logging
from pathlib import Path

import pytest

from causal_disent.utils import console

FULL = Path("/dev/full")  # every write fails with ENOSPC


@pytest.mark.skipif(not FULL.exists(), reason="needs /dev/full")
def test_a_log_file_that_cannot_be_written_says_so_once_and_raises_nothing(capsys):
    handler = console.log_to_file(FULL)
    logger = python_logging.getLogger("causal_disent.test_console")
    logger.setLevel(python_logging.INFO)
    try:
        for i in range(3):
            logger.info("row %d", i)  # each emit flushes: the write fails here
        handler.flush()
    finally:
        python_logging.getLogger().removeHandler(handler)
        handler.close()  # its last flush fails too: not raised over the run's error
    stderr = capsys.readouterr().err
    assert stderr == (f"warning: cannot write {FULL} (No space left on device); the run goes "
                      f"on without it\n")


def test_a_writable_log_file_holds_every_record(tmp_path):
    handler = console.log_to_file(tmp_path / "log.txt")
    logger = python_logging.getLogger("causal_disent.test_console")
    logger.setLevel(python_logging.INFO)
    try:
        logger.info("first")
        logger.warning("second")
    finally:
        python_logging.getLogger().removeHandler(handler)
        handler.close()
    lines = (tmp_path / "log.txt").read_text().splitlines()
    assert [line.split(": ", 1)[1] for line in lines] == ["first", "second"]
    assert not handler.failed
