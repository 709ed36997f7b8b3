"""utils/coordinator: the TCP check a --distributed process other than 0 makes before
JAX joins the coordinator (whose own timeout ends the process with a fatal log)."""

import socket
import threading
import time

import pytest

from causal_disent.utils import coordinator


@pytest.mark.parametrize("address, parts", [
    ("localhost:1234", ("localhost", 1234)), ("10.0.0.1:80", ("10.0.0.1", 80)),
    ("[::1]:8476", ("::1", 8476)), ("localhost", None), (":1234", None),
    ("host:port", None), ("host:0", None), ("host:70000", None)])
def test_addresses_split_into_host_and_port(address, parts):
    assert coordinator.split_address(address) == parts


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_listening_coordinator_answers_even_when_it_starts_later():
    port = free_port()
    server = socket.socket()

    def listen_after_a_while():
        time.sleep(0.6)  # after the first refused tries
        server.bind(("127.0.0.1", port))
        server.listen()
    thread = threading.Thread(target=listen_after_a_while)
    thread.start()
    try:
        assert coordinator.unreachable_reason(f"127.0.0.1:{port}", timeout_s=10,
                                              retry_s=0.1) is None
    finally:
        thread.join()
        server.close()


def test_nothing_listening_is_a_reason_after_the_timeout():
    start = time.monotonic()
    reason = coordinator.unreachable_reason(f"127.0.0.1:{free_port()}", timeout_s=0.5,
                                            retry_s=0.1)
    assert reason == "Connection refused"
    assert 0.3 < time.monotonic() - start < 3


def test_a_port_another_socket_listens_on_is_taken_and_a_free_one_is_not():
    with socket.socket() as holder:
        holder.bind(("0.0.0.0", 0))
        holder.listen()
        port = holder.getsockname()[1]
        assert coordinator.port_taken_reason(port) == "Address already in use"
    assert coordinator.port_taken_reason(free_port()) is None
