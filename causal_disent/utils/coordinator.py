"""The `--distributed` processes meet over plain TCP before JAX is asked to join them.

jax.distributed.initialize cannot fail gracefully: when the coordinator never answers,
or a process never joins, XLA's client ends the process after its timeout with a
fatal log and a C++ stack trace, and a coordinator port another job holds makes XLA's
server crash (a segmentation fault). So when every process is given its address,
count and index, they first meet here: process 0 listens on the coordinator's port
(one line when it cannot) and waits for a greeting from each other process; each
other process connects, retrying while process 0 has not started, greets it, and
waits for its answer. Only when all N have met does process 0 free the port and JAX
start; otherwise every process that can still be told ends with one line saying who
was missing or which flags disagree.

Where JAX finds the three itself (SLURM, Open MPI, Kubernetes, Cloud TPU VMs),
`detect_cluster` asks JAX's own detection for them first, so that those processes
meet here too; errors then say what to change in the cluster's set-up, not in flags.

The greeting is one line, "causal_disent <process_id> <num_processes>"; the answer is
"go <watch port>" (the port of process 0's watch of the run, utils/peer_watch.py; "go"
alone when it has none), or "stop <why>".
"""

import contextlib
import dataclasses
import errno
import re
import selectors
import socket
import threading
import time
import warnings

from causal_disent.utils import console

_GREETING = "causal_disent"
_CLOSE_WAIT_S = 2.0  # how long process 0 waits for its peers to hang up after "go"
# JAX is given this much longer than `ends_unless_done_within`, so that ours comes first.
JAX_GRACE_S = 30  # whole seconds: JAX takes an int


class RendezvousError(Exception):
    """The processes could not meet; the message says why and what to fix."""


@dataclasses.dataclass(frozen=True)
class Origin:
    """Where the address, count and indices came from, so that an error names what to
    change: the three flags (`cluster` None), or the cluster JAX detected ("SLURM")."""
    cluster: str | None = None

    def start_every_process(self, num_processes: int) -> str:
        if self.cluster is None:
            return (f"start every process with the same --coordinator_address and "
                    f"--num_processes={num_processes} and its own --process_id (0 to "
                    f"{num_processes - 1})")
        return (f"check that {self.cluster} starts this command in each of its "
                f"{num_processes} processes (one failing at start-up leaves the others "
                f"waiting)")

    def free_port(self) -> str:
        if self.cluster is None:
            return "give every process a --coordinator_address with a free port"
        return ("set JAX_COORDINATOR_PORT to a free port in every process's environment "
                "(or give every process --coordinator_address=HOST:PORT)")

    def fix_address(self) -> str:
        if self.cluster is None:
            return "fix --coordinator_address"
        return self.free_port()

    def start_process_0(self) -> str:
        if self.cluster is None:
            return ("start process 0 (--process_id=0 serves it) or fix "
                    "--coordinator_address to its HOST:PORT")
        return (f"check that {self.cluster}'s process 0 runs this command, or give "
                f"every process --coordinator_address=HOST:PORT (process 0's)")

    def one_job(self, what: str, num_processes: int) -> str:
        """Advice for processes whose greetings disagree: `what` is the flag at fault."""
        if self.cluster is None:
            if what == "--num_processes":
                return "give every process the same --num_processes"
            return (f"give each process its own --process_id, 0 (the coordinator) to "
                    f"{num_processes - 1}")
        return ("another job's processes may have reached this coordinator's port: "
                + self.free_port())


FLAGS = Origin()

# JAX's names for the clusters it detects, as a reader knows them.
_CLUSTER_NAMES = {"slurm": "SLURM", "ompi": "Open MPI", "K8sCluster": "Kubernetes",
                  "gcetpu": "the TPU VM", "gketpu": "GKE's TPU job", "tpu": "the TPU VM"}


@dataclasses.dataclass(frozen=True)
class Cluster:
    """The processes' set-up as JAX's cluster detection fills it in."""
    origin: Origin
    address: str
    num_processes: int
    process_id: int


@contextlib.contextmanager
def ends_unless_done_within(timeout_s: float, line: str):
    """Runs the block; when it has not returned after `timeout_s` seconds, prints
    `line` on stderr and ends the process with status 1. For jax.distributed.initialize
    (given `JAX_GRACE_S` more): the meeting here does not stop a process from ending
    between it and JAX's start, and JAX then waits out its deadline and aborts with a
    fatal log and a C++ stack trace, which nothing in the process can catch."""
    timer = threading.Timer(timeout_s, console.exit_at_once, (1, line))  # inside XLA
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def detect_cluster(address: str | None, num_processes: int | None,
                   process_id: int | None, timeout_s: float) -> Cluster | None:
    """What jax.distributed.initialize would detect for the values left None (the
    given ones are kept, as JAX keeps them), or None where no cluster is detected or
    JAX's detection (a private API) cannot be asked: JAX then tries, and says why,
    itself. Raises RendezvousError where a cluster is there but cannot say where its
    processes are (e.g. a Kubernetes pod without the `kubernetes` package, or whose
    API refuses the query), which JAX would report as a warning and a traceback."""
    try:
        from jax._src import clusters  # pylint: disable=import-outside-toplevel
        cluster_types = clusters.ClusterEnv._cluster_types  # noqa: SLF001
        fill_in = clusters.ClusterEnv.auto_detect_unset_distributed_params
    except (ImportError, AttributeError):  # the private API moved
        return None
    found = None
    with warnings.catch_warnings(record=True) as warned:  # JAX warns again when it starts
        warnings.simplefilter("always")
        try:
            for env in cluster_types:
                if not env.opt_in_only_method and env.is_env_present():
                    found = env
                    break
            if found is not None:
                address, num_processes, process_id, _ = fill_in(
                    address, num_processes, process_id, None, None, int(timeout_s))
        except Exception as error:  # pylint: disable=broad-except  # the cluster's own query
            raise RendezvousError(  # `env`: the cluster whose query failed
                f"{_cluster_name(env)} was detected but could not say where its processes are "
                f"({type(error).__name__}: {_one_line(str(error))}); fix its set-up, or "
                f"{_GIVE_ALL_THREE}") from error
    if found is None:
        said = [w.message for w in warned if w.category is UserWarning]
        if said:  # a cluster JAX saw but cannot ask, e.g. a package missing
            raise RendezvousError(f"{_one_line(str(said[0]))}; or {_GIVE_ALL_THREE}")
        return None
    if (not isinstance(address, str) or split_address(address) is None
            or not isinstance(num_processes, int) or not isinstance(process_id, int)):
        return None
    return Cluster(Origin(_cluster_name(found)), address, num_processes, process_id)


_GIVE_ALL_THREE = ("give every process --coordinator_address=HOST:PORT (process 0's), "
                   "--num_processes=N and its own --process_id (0 to N - 1)")


def _cluster_name(env) -> str:
    name = getattr(env, "name", None) or env.__name__
    return _CLUSTER_NAMES.get(name, name)


def _one_line(text: str) -> str:
    """A multi-line message from JAX as one line: whitespace collapsed, and the
    example that follows a sentence ending in a colon (a command block) left out."""
    text = " ".join(text.split())
    sentences = re.split(r"(?<=[.:])\s+", text)
    kept = []
    for sentence in sentences:
        if sentence.endswith(":"):
            break
        kept.append(sentence)
    return " ".join(kept or sentences).rstrip(".") or "no message"


def split_address(address: str) -> tuple[str, int] | None:
    """(host, port) of "host:port" ("[v6]:port" too), or None when it is not one."""
    host, colon, port = address.rpartition(":")
    if not colon or not host or not port.isdigit() or not 0 < int(port) < 65536:
        return None
    return host.strip("[]"), int(port)


def listen(port: int) -> socket.socket:
    """A socket listening on `port` on every address of this host, where JAX's process 0
    serves the coordinator (dual-stack where the host has IPv6). SO_REUSEADDR, as gRPC
    sets it, so that only a listening socket makes the port taken, not connections
    closing. Raises OSError when the port cannot be had."""
    for family, address in ((socket.AF_INET6, "::"), (socket.AF_INET, "0.0.0.0")):
        try:
            server = socket.socket(family, socket.SOCK_STREAM)
        except OSError:  # no IPv6 on this host: try IPv4
            continue
        try:
            server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                server.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
            server.bind((address, port))
            server.listen()
            return server
        except OSError as error:
            server.close()
            if error.errno != errno.EADDRNOTAVAIL:
                raise
    raise OSError(errno.EADDRNOTAVAIL, "no address of this host to listen on")


def meet(address: str, num_processes: int, process_id: int, timeout_s: float,
         origin: Origin = FLAGS, watch_port: int | None = None) -> int | None:
    """Every process calls this, before jax.distributed.initialize, with the same
    `address` (process 0's HOST:PORT, as `split_address` accepts) and `num_processes`,
    and its own `process_id`. It returns once all have met, so that JAX starts only
    when it can finish; it prints what this process waits for, and raises
    RendezvousError saying why the processes cannot meet (and, after `origin`, what
    to change). Process 0 tells the others its `watch_port`; they return it (None
    when process 0 has none)."""
    if not 0 <= process_id < num_processes:
        raise RendezvousError(
            f"--process_id={process_id} is not one of 0 to {num_processes - 1} "
            f"(--num_processes={num_processes}); give each process its own index")
    if process_id == 0:
        port = split_address(address)[1]
        try:
            server = listen(port)
        except OSError as error:
            raise RendezvousError(
                f"process 0 cannot serve the coordinator on port {port} "
                f"({error.strerror or error}; another job's coordinator?); "
                f"{origin.free_port()}") from None
        print(f"[distributed] process 0: serving the coordinator at {address}; waiting "
              f"up to {timeout_s:g} s for all {num_processes} processes", flush=True)
        gather(server, num_processes, timeout_s, origin, watch_port)
        return watch_port
    else:
        print(f"[distributed] process {process_id}: waiting up to {timeout_s:g} s for "
              f"the coordinator at {address} and all {num_processes} processes",
              flush=True)
        return join(address, process_id, num_processes, timeout_s, origin=origin)


def gather(server: socket.socket, num_processes: int, timeout_s: float,
           origin: Origin = FLAGS, watch_port: int | None = None) -> None:
    """Process 0: wait on `server` (from `listen`) until processes 1 … N - 1 have each
    greeted it, then close `server`, freeing the port for JAX's coordinator, and
    answer "go" (with `watch_port`, when given) to each. Raises RendezvousError,
    after telling the processes that came, when one has not joined within
    `timeout_s` seconds, two give the same --process_id, or one counts a different
    --num_processes."""
    deadline = time.monotonic() + timeout_s
    selector = selectors.DefaultSelector()
    selector.register(server, selectors.EVENT_READ)
    greeting: dict[socket.socket, bytes] = {}  # connections whose greeting is incomplete
    joined: dict[int, socket.socket] = {}
    refused: list[socket.socket] = []  # greeted with flags that do not fit this job
    problem = None

    def drop(connection):
        selector.unregister(connection)
        connection.close()
        greeting.pop(connection, None)
        for process_id in [i for i, joiner in joined.items() if joiner is connection]:
            del joined[process_id]

    try:
        while problem is None and len(joined) < num_processes - 1:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                missing = [i for i in range(1, num_processes) if i not in joined]
                problem = (f"{_process_list(missing)} of {num_processes} did not join in "
                           f"{timeout_s:g} s; {origin.start_every_process(num_processes)}, "
                           f"or raise --distributed_timeout")
                break
            for key, _ in selector.select(remaining):
                if key.fileobj is server:
                    try:
                        connection, _ = server.accept()
                    except OSError:  # it hung up before being accepted
                        continue
                    connection.settimeout(_CLOSE_WAIT_S)
                    selector.register(connection, selectors.EVENT_READ)
                    greeting[connection] = b""
                    continue
                connection = key.fileobj
                try:
                    data = connection.recv(256)
                except OSError:
                    data = b""
                if not data:  # it gave up waiting, or was only a port probe
                    drop(connection)
                    continue
                if connection not in greeting:
                    continue  # nothing more is expected from a process that greeted
                greeting[connection] += data
                if b"\n" not in greeting[connection]:
                    continue
                words = greeting.pop(connection).split(b"\n")[0].decode(errors="replace")
                words = words.split()
                if (len(words) != 3 or words[0] != _GREETING
                        or not (words[1].isdigit() and words[2].isdigit())):
                    drop(connection)  # not one of ours
                    continue
                process_id, their_count = int(words[1]), int(words[2])
                problem = _disagreement(process_id, their_count, num_processes, joined,
                                        origin)
                if problem is None:
                    joined[process_id] = connection
                else:
                    refused.append(connection)
        server.close()  # JAX's coordinator binds this port next
        go = "go" if watch_port is None else f"go {watch_port}"
        answer = (f"{go}\n" if problem is None else f"stop {problem}\n").encode()
        # On a problem, those still greeting are told too, so that they end at once.
        told = [*joined.values(), *refused, *(greeting if problem else [])]
        for connection in told:
            try:
                connection.sendall(answer)
            except OSError:
                pass  # it has gone, and says why itself
        _wait_for_hang_ups(told)
    finally:
        server.close()
        for key in list(selector.get_map().values()):
            key.fileobj.close()
        selector.close()
    if problem is not None:
        raise RendezvousError(problem)


def join(address: str, process_id: int, num_processes: int, timeout_s: float,
         retry_s: float = 0.5, origin: Origin = FLAGS) -> int | None:
    """A process other than 0: connect to process 0 at `address` (retrying for
    `timeout_s` seconds, since it may start later), greet it and wait, within the
    same `timeout_s`, until it says every process has joined. Returns the watch port
    it answered with (None without one); raises RendezvousError saying why not."""
    deadline = time.monotonic() + timeout_s
    connection, reason = _connect(address, deadline, retry_s)
    if connection is None:
        raise RendezvousError(
            f"no coordinator answered at {address} in {timeout_s:g} s ({reason}); "
            f"{origin.start_process_0()}")
    with connection:
        try:
            connection.sendall(f"{_GREETING} {process_id} {num_processes}\n".encode())
            answer = _read_line(connection, deadline)
        except TimeoutError:
            raise RendezvousError(
                f"process 0 at {address} had not heard from every process in "
                f"{timeout_s:g} s; {origin.start_every_process(num_processes)}, or "
                f"raise --distributed_timeout"
            ) from None
        except OSError as error:
            answer = f"(connection lost: {error.strerror or type(error).__name__})"
    words = answer.split()
    if words[:1] == ["go"] and len(words) <= 2 and all(word.isdigit() for word in words[1:]):
        return int(words[1]) if len(words) == 2 else None
    if answer.startswith("stop "):
        raise RendezvousError(f"process 0 stopped: {answer[len('stop '):]}")
    raise RendezvousError(
        f"the coordinator at {address} did not answer as a causal_disent process 0 "
        f"({answer or 'it hung up'}); start process 0 with this version of "
        f"causal_disent, or {origin.fix_address()}")


def _disagreement(process_id: int, their_count: int, num_processes: int,
                  joined: dict, origin: Origin = FLAGS) -> str | None:
    """Why a process greeting with these flags cannot be one of this job's (whose
    `joined` processes have greeted already), or None."""
    flags = origin is FLAGS
    if their_count != num_processes:
        said = (f"was started with --num_processes={their_count} and process 0 with "
                f"{num_processes}" if flags
                else f"counts {their_count} processes, process 0 counts {num_processes}")
        return (f"process {process_id} {said}; "
                f"{origin.one_job('--num_processes', num_processes)}")
    if process_id in joined or not 0 < process_id < num_processes:
        duplicate = process_id in joined
        if flags:
            said = (f"{'two processes were' if duplicate else 'a process was'} started "
                    f"with --process_id={process_id}")
        else:
            said = (f"{'two processes say they are' if duplicate else 'a process says it is'}"
                    f" process {process_id}")
        return f"{said}; {origin.one_job('--process_id', num_processes)}"
    return None


def _process_list(ids: list[int]) -> str:
    named = ", ".join(map(str, ids[:-1])) + (" and " if len(ids) > 1 else "") + str(ids[-1])
    return f"process{'es' if len(ids) > 1 else ''} {named}"


def _wait_for_hang_ups(connections: list[socket.socket]) -> None:
    """Let each peer close first, so that the closed connections' TIME_WAIT lies on
    their side rather than on the coordinator's port."""
    deadline = time.monotonic() + _CLOSE_WAIT_S
    for connection in connections:
        try:
            connection.settimeout(max(deadline - time.monotonic(), 0.01))
            while connection.recv(256):
                pass
        except OSError:
            pass


def _read_line(connection: socket.socket, deadline: float) -> str:
    """The first line `connection` sends before `deadline` (TimeoutError after it),
    or what came before it hung up."""
    received = b""
    while b"\n" not in received:
        connection.settimeout(max(deadline - time.monotonic(), 0.01))
        data = connection.recv(1024)
        if not data:
            break
        received += data
    return received.split(b"\n")[0].decode(errors="replace").strip()


def _connect(address: str, deadline: float,
             retry_s: float) -> tuple[socket.socket | None, str | None]:
    """(connection, None), or (None, why the last try before `deadline` failed)."""
    parts = split_address(address)
    if parts is None:
        return None, f"{address!r} is not HOST:PORT"
    while True:
        remaining = deadline - time.monotonic()
        try:
            return socket.create_connection(
                parts, timeout=max(min(remaining, 2.0), 0.1)), None
        except OSError as error:  # refused, unknown host, unreachable, timed out
            reason = error.strerror or type(error).__name__
        if time.monotonic() + retry_s >= deadline:
            return None, reason
        time.sleep(retry_s)
