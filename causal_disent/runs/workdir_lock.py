"""One run at a time per workdir: WORKDIR/run.lock, held while a run uses it.

Two runs writing one workdir interleave their checkpoints and write every metric
row twice. A run holds an exclusive `flock` on the lock file while its stages run;
the kernel releases it when the holder exits, is killed (even `kill -9`) or its host
goes, so a dead holder never blocks the next run. The file keeps who holds it (host,
pid, start time) for the error a second run gets. On a shared filesystem the lock
works across hosts where the filesystem supports locks (NFSv4, Lustre, GCS FUSE does
not). With several processes, process 0 holds it for the whole run.
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import jax

LOCK_FILE = "run.lock"


class WorkdirBusy(ValueError):
    """Another run holds the workdir."""


@contextlib.contextmanager
def held(workdir: Path) -> Iterator[None]:
    """Holds `workdir`'s lock inside; raises WorkdirBusy naming the holder when
    another run holds it. Process 0 alone takes it (its peers share the run)."""
    if jax.process_index() != 0:
        yield
        return
    path = Path(workdir) / LOCK_FILE
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise WorkdirBusy(
                f"workdir {workdir} is in use by another run ({_holder(path)}); wait for "
                f"it to finish or stop it, or pass another --workdir") from None
        os.ftruncate(descriptor, 0)
        os.write(descriptor, json.dumps({
            "host": socket.gethostname(), "pid": os.getpid(),
            "started": datetime.datetime.now(datetime.timezone.utc).strftime(
                "%Y-%m-%d %H:%M:%S UTC"),
        }).encode())
        yield
    finally:
        os.close(descriptor)  # releases the lock; the file stays for the next run


def _holder(path: Path) -> str:
    """'pid P on host H, started T' from the lock file, or what is known."""
    try:
        holder = json.loads(path.read_text())
        return f"pid {holder['pid']} on host {holder['host']}, started {holder['started']}"
    except (OSError, ValueError, KeyError, TypeError):  # the holder is writing it now
        return "its details are not written yet"
