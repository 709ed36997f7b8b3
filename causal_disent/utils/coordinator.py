"""Whether a `--distributed` coordinator answers, checked before JAX is asked to join it.

jax.distributed.initialize cannot fail gracefully when the coordinator never answers:
after its timeout XLA's client ends the process with a fatal log and a C++ stack
trace. A process other than 0 can first check, with plain TCP, that something
listens at the coordinator's address, and say so in one line when nothing does (a
mistyped host or port, or process 0 not started). Process 0, which serves the
coordinator, checks that its port is free: a port another job holds makes XLA's
server crash (a segmentation fault after one log line).
"""

import errno
import socket
import time


def split_address(address: str) -> tuple[str, int] | None:
    """(host, port) of "host:port" ("[v6]:port" too), or None when it is not one."""
    host, colon, port = address.rpartition(":")
    if not colon or not host or not port.isdigit() or not 0 < int(port) < 65536:
        return None
    return host.strip("[]"), int(port)


def unreachable_reason(address: str, timeout_s: float, retry_s: float = 0.5) -> str | None:
    """None once a TCP connection to `address` ("host:port") succeeds; else, after
    `timeout_s` seconds of retries (process 0 may start later than this one), why the
    last try failed."""
    parts = split_address(address)
    if parts is None:
        return f"{address!r} is not HOST:PORT"
    deadline = time.monotonic() + timeout_s
    while True:
        remaining = deadline - time.monotonic()
        try:
            with socket.create_connection(parts, timeout=max(min(remaining, 2.0), 0.1)):
                return None
        except OSError as error:  # refused, unknown host, unreachable, timed out
            reason = error.strerror or type(error).__name__
        if time.monotonic() + retry_s >= deadline:
            return reason
        time.sleep(retry_s)


def port_taken_reason(port: int) -> str | None:
    """Why the coordinator could not listen on `port` on every address of this host
    (where JAX's process 0 binds it), or None when it can. SO_REUSEADDR, as gRPC sets
    it, so that only a listening socket counts, not connections closing."""
    for family, address in ((socket.AF_INET6, "::"), (socket.AF_INET, "0.0.0.0")):
        try:
            probe = socket.socket(family, socket.SOCK_STREAM)
        except OSError:  # no IPv6 on this host: try IPv4
            continue
        with probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((address, port))
                probe.listen()
            except OSError as error:
                if error.errno == errno.EADDRNOTAVAIL:
                    continue
                return error.strerror or type(error).__name__
        return None
    return None
