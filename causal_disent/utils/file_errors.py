"""File errors that name their file.

A full disk often shows first where no file name is at hand: at a buffered write's
flush or close, inside PIL's PNG writer, inside tensorboardX's event writer. The OSError
then has no `filename`, and the run's one error line (main.py) could only say "in the
workdir". `naming(path)` gives such an error the path the caller was writing.
"""

import contextlib
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def naming(path: str | Path) -> Iterator[None]:
    """Re-raises an OSError without a file name as the same error naming `path`."""
    try:
        yield
    except OSError as error:
        if error.filename is not None:
            raise
        raise OSError(error.errno, error.strerror or str(error), str(path)) from error
