"""utils/peer_watch: a --distributed process that is killed ends the others at once,
in one line, instead of after JAX's 100 s heartbeat and its fatal abort."""

import os
import socket
import subprocess
import sys
import threading
import time

import pytest

from causal_disent.utils import coordinator, peer_watch
from tests.utils.test_coordinator import free_port


def recorded_end(lines: list, done: threading.Event):
    def end(line):
        lines.append(line)
        done.set()
    return end


def watched_by_process_0(num_processes: int):
    """Process 0's watch on a fresh port, and connections from processes 1 … N - 1
    that have greeted it."""
    lines, done = [], threading.Event()
    server = coordinator.listen(0)
    watch = peer_watch.PeerWatch(0, num_processes, server=server, timeout_s=10,
                                 end=recorded_end(lines, done))
    watch.start()
    peers = []
    for process_id in range(1, num_processes):
        peer = socket.create_connection(("localhost", peer_watch.port_of(server)))
        peer.sendall(f"watch {process_id}\n".encode())
        peers.append(peer)
    deadline = time.monotonic() + 10
    while len(watch._peers) < num_processes - 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    return watch, peers, lines, done


def test_process_0_names_a_process_that_closed_without_a_word_and_tells_the_others():
    watch, (first, second), lines, done = watched_by_process_0(3)
    first.close()  # as the kernel closes a killed process's sockets
    assert done.wait(10)
    assert lines == [peer_watch.died_line(1, 3)]
    assert lines[0].startswith("error: --distributed: process 1 of 3 ended without a word")
    second.settimeout(10)
    assert second.recv(256) == b"stop 1\n"  # process 2 ends with the same line
    second.close()


def test_a_process_that_says_bye_is_not_taken_for_dead_and_process_0_says_bye_at_its_end():
    watch, (first, second), lines, done = watched_by_process_0(3)
    first.sendall(b"bye\n")
    first.close()
    assert not done.wait(0.5) and lines == []
    watch.close()  # process 0 ends on its own
    second.settimeout(10)
    assert second.recv(256) == b"bye\n"
    assert not done.wait(0.2) and lines == []
    second.close()


def watching_process_0(num_processes: int = 3):
    """Process 1's watch, connected to a stand-in process 0: (server side of the
    connection, recorded lines, event)."""
    lines, done = [], threading.Event()
    server = coordinator.listen(0)
    watch = peer_watch.PeerWatch(1, num_processes, address=("localhost", server.getsockname()[1]),
                                 timeout_s=10, end=recorded_end(lines, done))
    watch.start()
    server.settimeout(10)
    connection, _ = server.accept()
    server.close()
    connection.settimeout(10)
    assert connection.recv(256) == b"watch 1\n"
    return watch, connection, lines, done


@pytest.mark.parametrize("told, died", [(b"stop 2\n", 2), (b"", 0)])
def test_a_process_ends_when_told_of_a_death_or_when_process_0_dies(told, died):
    _, connection, lines, done = watching_process_0()
    if told:
        connection.sendall(told)
    else:
        connection.close()  # process 0 killed
    assert done.wait(10)
    assert lines == [peer_watch.died_line(died, 3)]


def test_process_0_ending_on_its_own_ends_nothing():
    _, connection, lines, done = watching_process_0()
    connection.sendall(b"bye\n")
    connection.close()
    assert not done.wait(0.5) and lines == []


def test_a_process_ending_on_its_own_says_bye_to_process_0():
    watch, connection, lines, done = watching_process_0()
    watch.close()
    assert connection.recv(256) == b"bye\n"
    assert not done.wait(0.2) and lines == []


def test_a_watch_that_cannot_connect_leaves_the_run_to_jax():
    lines, done = [], threading.Event()
    watch = peer_watch.PeerWatch(1, 2, address=("127.0.0.1", free_port()), timeout_s=1,
                                 end=recorded_end(lines, done))
    watch.start()
    watch._thread.join(10)
    assert not watch._thread.is_alive() and lines == []
    assert peer_watch.start(1, 2, "localhost:1", None, None, 1) is None  # no port told
    assert peer_watch.start(0, 1, "localhost:1", None, None, 1) is None  # alone


def test_killing_a_process_ends_the_other_in_one_line_within_seconds(tmp_path):
    """Two real processes; process 1 is killed once process 0 has written its first
    row (both have joined JAX and the watch): process 0 ends with the watch's line
    and status 1 (JAX's heartbeat took about 100 s, then aborted it)."""
    from tests.helpers import REPO_ROOT

    port = free_port()
    processes = []
    for process_id in (0, 1):
        command = [sys.executable, "-m", "causal_disent.main",
                   f"--config={REPO_ROOT / 'configs' / 'betavae_dsprites_synth.py'}:tiny",
                   f"--workdir={tmp_path / 'w'}", "--config.vae.train.num_steps=100000",
                   "--distributed", f"--coordinator_address=localhost:{port}",
                   "--num_processes=2", f"--process_id={process_id}"]
        processes.append(subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            env=dict(os.environ, PYTHONPATH=str(REPO_ROOT), JAX_PLATFORMS="cpu")))
    rows = tmp_path / "w" / "metrics.jsonl"
    deadline = time.monotonic() + 120
    while not (rows.exists() and rows.stat().st_size) and time.monotonic() < deadline:
        assert processes[0].poll() is None, processes[0].communicate()[1][-3000:]
        time.sleep(0.2)
    processes[1].kill()
    killed_at = time.monotonic()
    processes[1].communicate()
    _, stderr = processes[0].communicate(timeout=60)
    assert processes[0].returncode == 1, stderr[-3000:]
    assert stderr.strip().splitlines()[-1] == peer_watch.died_line(1, 2)
    assert time.monotonic() - killed_at < 30
