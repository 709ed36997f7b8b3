"""Figures drawn and written by other processes while this one goes on.

Drawing a figure and encoding its PNG is matplotlib's and zlib's work on the host,
under the interpreter lock: a few tenths of a second for each figure of a stage's
end, paid one after the other (three a seed in a stacked β-VAE run), while the
devices wait.
Inside `saved_in_parallel(workers)`, `figures.save_figure` sends each figure (a
matplotlib Figure pickles whole, and draws to the same pixels when unpickled) to
one of `workers` processes and returns at once, and `figures.save_drawn` sends the
drawing function and its arguments, so that the worker builds the figure too; the
block's end waits for every file.

The workers run this module (`python -m causal_disent.utils.figure_workers`), each
reading (figure or drawing, path) jobs on its stdin and answering on its stdout. Not
multiprocessing's pools: their "spawn" start runs the caller's main script again in
every worker (a script without the `if __name__ == "__main__"` guard would start
training there), and "fork" could deadlock a child of a process running JAX's
threads. A worker that cannot start or dies (killed, out of memory) loses no
figure: the ones it was given are drawn here at the block's end, with a warning.
"""

import concurrent.futures
import contextlib
import os
import pickle
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

from absl import logging

from causal_disent.utils import figures

# Workers beyond this add processes (about 70 MB each before their first figure) for
# little: a stage's end draws a handful of figures a seed.
MAX_WORKERS = 8

# How a worker is started (the tests start one that fails).
WORKER_COMMAND = (sys.executable, "-m", "causal_disent.utils.figure_workers")


@contextlib.contextmanager
def saved_in_parallel(workers: int) -> Iterator[None]:
    """Within the block, `figures.save_figure` and `figures.save_drawn` hand
    figures to up to `workers` processes (at most MAX_WORKERS), started as they are
    needed; the block ends once every file is written, raising the error of the
    first figure (in the order they were saved) that failed. With workers <= 1, or
    inside another such block, figures are drawn where they are saved, as outside."""
    if workers <= 1 or figures._parallel_saver is not None:
        yield
        return
    local = threading.local()  # each pool thread's own worker process
    started: list[_Worker] = []
    undrawn: list[tuple] = []  # (job, path, why) whose worker ended: drawn here
    lock = threading.Lock()

    def draw_remotely(job, path: Path) -> None:
        if getattr(local, "lost", None) is not None:
            undrawn.append((job, path, local.lost))
            return
        try:
            if getattr(local, "worker", None) is None:
                local.worker = _Worker()
                with lock:
                    started.append(local.worker)
            local.worker.write(job, path)
        except FigureWorkerError as error:
            local.lost = error  # this thread's later figures are drawn here too
            undrawn.append((job, path, error))

    pool = concurrent.futures.ThreadPoolExecutor(min(workers, MAX_WORKERS),
                                                 thread_name_prefix="figure-worker")
    saved: list[concurrent.futures.Future] = []
    figures._parallel_saver = lambda job, path: saved.append(
        pool.submit(draw_remotely, job, path))
    try:
        yield
        for future in saved:
            future.result()
    finally:
        figures._parallel_saver = None
        pool.shutdown(wait=True, cancel_futures=True)
        for worker in started:
            worker.close()
    if undrawn:
        logging.warning("%s; drawing the %d figure(s) it left in this process instead",
                        undrawn[0][2], len(undrawn))
        for job, path, _ in undrawn:
            figures.write_png(figures.as_figure(job), path)


class FigureWorkerError(RuntimeError):
    """A worker process ended without answering (could not start, killed, or out of
    memory)."""


class _Worker:
    """One worker process and its pipes; used by one thread at a time. Its stderr
    goes to a file, so that a worker's end is explained in a warning, not in a
    traceback on the console."""

    def __init__(self):
        package_root = str(Path(figures.__file__).resolve().parents[2])
        environment = dict(os.environ)
        environment["PYTHONPATH"] = os.pathsep.join(
            [package_root] + ([environment["PYTHONPATH"]] if environment.get("PYTHONPATH") else []))
        self._stderr = tempfile.TemporaryFile()
        try:
            self._process = subprocess.Popen(
                list(WORKER_COMMAND), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=self._stderr, env=environment)
        except OSError as error:  # e.g. no process may be started here
            self._stderr.close()
            raise FigureWorkerError(f"could not start a figure process ({error})") from None

    def write(self, job, path: Path) -> None:
        """Has the worker draw `job` (a Figure or a figures.Drawing) to `path`; raises
        its error if it failed, FigureWorkerError if it ended."""
        try:
            pickle.dump((job, path), self._process.stdin, protocol=pickle.HIGHEST_PROTOCOL)
            self._process.stdin.flush()
            error = pickle.load(self._process.stdout)
        except (BrokenPipeError, EOFError):
            raise FigureWorkerError(
                f"a figure process ended (exit status {self._process.wait()}) before "
                f"writing {path}{self._last_words()}") from None
        if error is not None:
            raise error

    def _last_words(self) -> str:
        self._stderr.seek(0)
        lines = self._stderr.read().decode(errors="replace").strip().splitlines()
        return f": {lines[-1]}" if lines else ""

    def close(self) -> None:
        """Ends the worker: it exits when its stdin closes."""
        with contextlib.suppress(BrokenPipeError):
            self._process.stdin.close()
        self._process.wait()
        self._process.stdout.close()
        self._stderr.close()


def _serve(jobs, answers) -> None:
    """The worker's loop: draws each (Figure or figures.Drawing, path) read from
    `jobs` and answers None, or the error it raised, until `jobs` ends."""
    while True:
        try:
            job, path = pickle.load(jobs)
        except EOFError:  # the parent closed the pipe, or ended
            return
        except Exception as error:  # noqa: BLE001 (a truncated job: the parent ended)
            _answer(answers, error, "a figure")
            return  # the rest of the stream cannot be read
        try:
            figures.write_png(figures.as_figure(job), path)
            answer = None
        except Exception as error:  # noqa: BLE001 (sent to the parent, which raises it)
            answer = error
        if not _answer(answers, answer, path):
            return


def _answer(answers, error: Exception | None, what) -> bool:
    """Sends `error` (None: done) to the parent; False when the parent has ended."""
    try:
        try:
            answers.write(pickle.dumps(error))
        except (pickle.PicklingError, TypeError, AttributeError):
            answers.write(pickle.dumps(RuntimeError(f"drawing {what} failed: {error!r}")))
        answers.flush()
    except BrokenPipeError:
        return False
    return True


if __name__ == "__main__":
    # Ctrl-C reaches the whole process group: the parent decides what it means, and
    # its end closes this worker's stdin.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    protocol_out = sys.stdout.buffer
    sys.stdout = sys.stderr  # anything printed must not corrupt the answers
    _serve(sys.stdin.buffer, protocol_out)
