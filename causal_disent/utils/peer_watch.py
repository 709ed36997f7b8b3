"""Every `--distributed` process ends at once, in one line, when another one fails.

JAX's coordination service notices a process that has died only when its heartbeats
stop (100 s), and then ends every other process with a fatal log ("Terminating
process because the JAX distributed service detected fatal errors"): a `kill -9` of
process 1 of 2 at step 284 left process 0 waiting that long, then aborted it. A
process that stops on an error of its own (one `error:` line) was worse: process 0
waited in the checkpoint's collective and process 1 in JAX's shutdown, both for
over six minutes, until killed. So after the meeting (utils/coordinator.py) each process
keeps one TCP connection to process 0 open for the run. A process that ends on its
own says "bye <status>" first (`say_bye`: at exit, and from the interrupt handler's
immediate exit); a connection its kernel closes without one belongs to a process
that was killed or crashed. On a death, or a bye with a status other than 0 (an
error, a signal; main notes a pause at --max_minutes, which every process takes at
the same step, as 0), process 0 tells the others ("died K" / "stopped K S"), and
every process that is not ending on its own within `GRACE_S` (the same error or
signal met everywhere at once keeps each process's own line) prints one line and
ends with status 1; a main thread whose
collective fails meanwhile (Gloo's do on CPUs) waits for that line instead of
printing its traceback (`explain_failure`). A process ending on an error skips
JAX's shutdown, which would wait for processes that cannot come. The
checkpoints are those of the last save, from which the same command resumes.

A connection lost any other way (a reset, a network timeout) is not taken for a
death: the watch of it stops, with a warning in the log, and JAX's heartbeat is left
to judge. The same holds for a process that cannot connect to the watch at all (a
port blocked between hosts).
"""

import atexit
import selectors
import socket
import threading
import time
from collections.abc import Callable

from absl import logging

from causal_disent.utils import console, coordinator

_BYE = b"bye"
ERROR_STATUS = 1  # sys.exit("error: ...") and an uncaught exception
GRACE_S = 2.0  # how long a process told of another's end waits to end on its own
_watch: "PeerWatch | None" = None  # this process's, once started
_exit_status = 0  # how this process is about to end, as main has noted it


def listen() -> socket.socket | None:
    """Process 0's watch socket, on a port the system picks (told to the others at
    the meeting), or None when it cannot have one (the run then goes unwatched)."""
    try:
        return coordinator.listen(0)
    except OSError as error:
        logging.warning("[distributed] process 0 cannot listen for its watch (%s)", error)
        return None


def port_of(server: socket.socket | None) -> int | None:
    return None if server is None else server.getsockname()[1]


def start(process_id: int, num_processes: int, coordinator_address: str,
          server: socket.socket | None, port: int | None,
          timeout_s: float) -> "PeerWatch | None":
    """The watch of this process, started (process 0 on `server`, the others on
    `port` of the coordinator's host), or None where there is none to keep."""
    if num_processes < 2 or (server if process_id == 0 else port) is None:
        return None
    host = coordinator.split_address(coordinator_address)[0]
    global _watch
    _watch = PeerWatch(process_id, num_processes, server=server, address=(host, port),
                       timeout_s=timeout_s)
    _watch.start()
    atexit.register(say_bye)
    return _watch


def note_exit(code) -> None:
    """Records how this process is about to end: a SystemExit's `code` (None, a
    status, or a message, which Python ends with status 1)."""
    global _exit_status
    _exit_status = 0 if code is None else code if isinstance(code, int) else ERROR_STATUS


def say_bye(status: int | None = None) -> None:
    """This process ends on its own, with `status` (default: the noted one): tells
    the watch. On an error, ends the process here, past JAX's shutdown, which would
    wait for the others (they end on hearing of it)."""
    status = _exit_status if status is None else status
    if _watch is None or not _watch.close(status):
        return
    if status == ERROR_STATUS:
        console.exit_at_once(status)


def explain_failure(wait_s: float = 1.0) -> None:
    """For an unexpected exception of this process's main thread in a --distributed
    run: a collective whose peer has gone raises one (on CPUs, Gloo's "Connection
    closed by peer"). When the watch hears within `wait_s` that another process died
    or failed, it ends this process with that line instead of the traceback."""
    if _watch is not None and _watch.told.wait(wait_s):
        time.sleep(GRACE_S + 1.0)  # the watch ends the process meanwhile


def stopped_line(process_id: int, num_processes: int, status: int) -> str:
    """The line every other process ends with when process `process_id` stopped on
    its own with `status` (an error, a signal: its own line says which)."""
    return (f"error: --distributed: process {process_id} of {num_processes} stopped with "
            f"status {status} (its own line, in its output, says why); the others cannot "
            f"go on without it and end here; rerun the same command on every process to "
            f"resume from the last checkpoint (once what stopped it is fixed)")


def died_line(process_id: int, num_processes: int) -> str:
    """The line every process ends with when process `process_id` died."""
    return (f"error: --distributed: process {process_id} of {num_processes} ended without "
            f"a word (killed, or crashed: see its output); the others cannot go on without "
            f"it and end here; rerun the same command on every process to resume from the "
            f"last checkpoint")


def end_process(line: str) -> None:
    """Prints `line` on stderr, logs it, and ends this process with status 1 at once:
    the main thread may be waiting inside XLA for the process that died."""
    logging.info("%s", line)  # log.txt; stderr gets it once, below
    console.exit_at_once(1, line)


class PeerWatch:
    """One process's side of the watch: process 0 serves it on `server` (a listening
    socket, see `coordinator.listen`), the others connect to process 0's `address`
    (host, port). Call `start`; `close` (registered at exit) says "bye"."""

    def __init__(self, process_id: int, num_processes: int, *,
                 server: socket.socket | None = None,
                 address: tuple[str, int] | None = None, timeout_s: float = 60.0,
                 end: Callable[[str], None] = end_process):
        self.process_id, self.num_processes = process_id, num_processes
        self._server, self._address, self._timeout_s = server, address, timeout_s
        self._end = end
        self._peers: dict[int, socket.socket] = {}  # process 0: the others' connections
        self._lock = threading.Lock()
        self._closed = threading.Event()  # set once this process ends on its own
        self.told = threading.Event()  # set once another process's end is known
        self._peers_gone = threading.Event()  # process 0, ending: every other has gone
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Accepts (process 0) or connects, then watches, in a thread of its own: a
        port blocked between hosts costs the run nothing but the watch."""
        watch = self._serve if self.process_id == 0 else self._watch_process_0

        def guarded():
            try:
                watch()
            except Exception as error:  # noqa: BLE001 - the run must not end for the watch
                if not self._closed.is_set():
                    logging.warning("[distributed] process %d's watch stopped (%r): if a "
                                    "process dies, JAX's heartbeat ends the others",
                                    self.process_id, error)

        self._thread = threading.Thread(target=guarded, name="peer-watch", daemon=True)
        self._thread.start()

    def close(self, status: int = 0) -> bool:
        """This process ends on its own with `status`: "bye <status>" to those it is
        connected with. False when it had closed already."""
        with self._lock:
            if self._closed.is_set():
                return False
            self._closed.set()
            connections = list(self._peers.values())
        # Process 0 still hears the others hang up: it serves JAX's coordination
        # service, whose end would make JAX abort a process still stopping.
        serving = self.process_id == 0
        for connection in connections:
            try:
                connection.sendall(_BYE + f" {status}\n".encode())
                connection.shutdown(socket.SHUT_WR if serving else socket.SHUT_RDWR)
            except OSError:
                pass
        if self._server is not None:
            self._server.close()
        if serving and connections:
            self._peers_gone.wait(GRACE_S + 1.0)  # they end within GRACE_S of the bye
        return True

    def _end_unless_closing(self, line: str) -> None:
        """Ends this process with `line`, unless it ends on its own within GRACE_S."""
        self.told.set()
        if not self._closed.wait(GRACE_S):
            self._end(line)

    # ----------------------------------------------------------------------- #
    # Process 0
    # ----------------------------------------------------------------------- #
    def _serve(self) -> None:
        """Accepts each other process ("watch <id>"), then waits for one to go."""
        selector = selectors.DefaultSelector()
        selector.register(self._server, selectors.EVENT_READ)
        deadline = time.monotonic() + self._timeout_s
        greetings: dict[socket.socket, bytes] = {}
        buffers: dict[int, bytes] = {}
        while True:
            accepting = self._server.fileno() != -1
            if accepting and (len(self._peers) == self.num_processes - 1
                              or time.monotonic() > deadline):
                self._stop_accepting(selector)
                accepting = False
            events = selector.select(max(deadline - time.monotonic(), 0.05)
                                     if accepting else None)
            for key, _ in events:
                if key.fileobj is self._server:
                    try:
                        connection, _ = self._server.accept()
                    except OSError:
                        continue
                    selector.register(connection, selectors.EVENT_READ, None)
                    greetings[connection] = b""
                    continue
                connection, peer = key.fileobj, key.data
                try:
                    data = connection.recv(256)
                except OSError as error:
                    self._lost(selector, connection, peer, error)
                    continue
                if peer is None:  # still greeting
                    peer = self._greeted(selector, connection, greetings, data)
                    if peer is not None:
                        buffers[peer] = b""
                    continue
                if data:
                    buffers[peer] += data
                    *lines, buffers[peer] = buffers[peer].split(b"\n")
                    statuses = [status for status in map(_bye_status, lines)
                                if status is not None]
                    if not statuses:
                        continue
                    status = statuses[0]
                    news = f"stopped {peer} {status}" if status else None
                    line = stopped_line(peer, self.num_processes, status) if status else None
                else:  # its kernel closed it: it died
                    news, line = f"died {peer}", died_line(peer, self.num_processes)
                self._forget(selector, connection, peer)
                if news is not None and not self._closed.is_set():
                    self._tell_others(peer, news)
                    self._end_unless_closing(line)  # returns if this process ends too
                if self._closed.is_set() and not self._peers:
                    self._peers_gone.set()
                    return

    def _greeted(self, selector, connection, greetings, data) -> int | None:
        """The process a "watch <id>" greeting names once complete (None before, or
        for a connection that is not one of ours, which is dropped)."""
        greetings[connection] += data
        if data and b"\n" not in greetings[connection]:
            return None
        words = greetings.pop(connection).split(b"\n")[0].split()
        if (len(words) != 2 or words[0] != b"watch" or not words[1].isdigit()
                or not 0 < int(words[1]) < self.num_processes):
            selector.unregister(connection)
            connection.close()
            return None
        peer = int(words[1])
        selector.modify(connection, selectors.EVENT_READ, peer)
        with self._lock:
            self._peers[peer] = connection
        return peer

    def _stop_accepting(self, selector) -> None:
        selector.unregister(self._server)
        self._server.close()
        missing = [i for i in range(1, self.num_processes) if i not in self._peers]
        if missing:
            logging.warning("[distributed] processes %s did not connect to process 0's "
                            "watch in %g s (a port blocked between hosts?): if one of them "
                            "dies, JAX's heartbeat ends the others (about 100 s)",
                            missing, self._timeout_s)

    def _forget(self, selector, connection, peer: int) -> None:
        selector.unregister(connection)
        connection.close()
        with self._lock:
            self._peers.pop(peer, None)

    def _lost(self, selector, connection, peer, error: OSError) -> None:
        if peer is not None and not self._closed.is_set():
            logging.warning("[distributed] process 0 lost its watch of process %d (%s): "
                            "if it dies, JAX's heartbeat ends the others", peer, error)
        selector.unregister(connection)
        connection.close()
        if peer is not None:
            with self._lock:
                self._peers.pop(peer, None)

    def _tell_others(self, peer: int, news: str) -> None:
        """`news` ("died K", "stopped K S") to every process but K."""
        with self._lock:
            others = [c for i, c in self._peers.items() if i != peer]
        for connection in others:
            try:
                connection.sendall(f"{news}\n".encode())
            except OSError:
                pass

    # ----------------------------------------------------------------------- #
    # The other processes
    # ----------------------------------------------------------------------- #
    def _connect(self) -> socket.socket | None:
        try:
            connection = socket.create_connection(self._address,
                                                  timeout=min(self._timeout_s, 30.0))
            connection.settimeout(None)
            with self._lock:  # known to `close` before process 0 hears of it
                if self._closed.is_set():  # this process ended meanwhile
                    connection.close()
                    return None
                self._peers[0] = connection
            connection.sendall(f"watch {self.process_id}\n".encode())
        except OSError as error:
            logging.warning("[distributed] process %d could not connect to process 0's "
                            "watch at %s:%d (%s): if a process dies, JAX's heartbeat ends "
                            "the others (about 100 s)", self.process_id, *self._address,
                            error)
            return None
        return connection

    def _watch_process_0(self) -> None:
        """Connects, then waits for process 0's "bye <status>" (it ended on its own),
        "died K" or "stopped K S", or its connection closing without a word
        (process 0 died)."""
        connection, received = self._connect(), b""
        if connection is None:
            return
        while True:
            try:
                data = connection.recv(256)
            except OSError as error:
                if not self._closed.is_set():
                    logging.warning("[distributed] process %d lost its watch of process 0 "
                                    "(%s): if it dies, JAX's heartbeat ends this process",
                                    self.process_id, error)
                return
            if not data:
                if not self._closed.is_set():
                    self._end_unless_closing(died_line(0, self.num_processes))
                return
            received += data
            *lines, received = received.split(b"\n")
            for line in lines:
                status = _bye_status(line)
                if status is not None:
                    if status:
                        self._end_unless_closing(stopped_line(0, self.num_processes, status))
                    else:
                        connection.close()  # process 0 waits for the others to hang up
                    return
                line = _told_line(line, self.num_processes)
                if line is not None:
                    self._end_unless_closing(line)
                    return


def _told_line(news: bytes, num_processes: int) -> str | None:
    """The line for process 0's news "died K" or "stopped K S" (None for another)."""
    words = news.split()
    if not all(word.isdigit() for word in words[1:]):
        return None
    if words[:1] == [b"died"] and len(words) == 2:
        return died_line(int(words[1]), num_processes)
    if words[:1] == [b"stopped"] and len(words) == 3:
        return stopped_line(int(words[1]), num_processes, int(words[2]))
    return None


def _bye_status(line: bytes) -> int | None:
    """The status of a "bye <status>" line ("bye" alone: 0), or None for another."""
    words = line.split()
    if words[:1] != [_BYE] or len(words) > 2:
        return None
    return int(words[1]) if len(words) == 2 and words[1].lstrip(b"-").isdigit() else 0
