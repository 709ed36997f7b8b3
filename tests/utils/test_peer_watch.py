"""utils/peer_watch: a --distributed process that is killed, or stops on its own (an
error, a signal), ends the others at once in one line, instead of JAX's 100 s
heartbeat and its fatal abort (a death) or a wait of many minutes (an error)."""

import os
import socket
import subprocess
import sys
import threading
import time

import pytest

from causal_disent.utils import coordinator, peer_watch
from tests.utils.test_coordinator import free_port


@pytest.fixture(autouse=True)
def short_grace(monkeypatch):
    monkeypatch.setattr(peer_watch, "GRACE_S", 0.2)


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
        peer.settimeout(10)
        peers.append(peer)
    deadline = time.monotonic() + 10
    while len(watch._peers) < num_processes - 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    return watch, peers, lines, done


@pytest.mark.parametrize("ending, told, line", [
    (lambda peer: peer.close(), b"died 1\n", peer_watch.died_line(1, 3)),  # its kernel
    (lambda peer: peer.sendall(b"bye 1\n"), b"stopped 1 1\n",
     peer_watch.stopped_line(1, 3, 1)),  # an error
    (lambda peer: peer.sendall(b"bye 143\n"), b"stopped 1 143\n",
     peer_watch.stopped_line(1, 3, 143)),  # a SIGTERM of its own
])
def test_process_0_names_a_process_that_died_or_stopped_and_tells_the_others(ending, told,
                                                                              line):
    _, (first, second), lines, done = watched_by_process_0(3)
    ending(first)
    assert done.wait(10)
    assert lines == [line]
    assert second.recv(256) == told  # process 2 ends with the same line
    assert peer_watch.died_line(1, 3).startswith(
        "error: --distributed: process 1 of 3 ended without a word")
    assert peer_watch.stopped_line(1, 3, 1).startswith(
        "error: --distributed: process 1 of 3 stopped with status 1 (its own line")


@pytest.mark.parametrize("bye", [b"bye 0\n", b"bye\n"])
def test_a_process_ending_on_its_own_without_an_error_ends_nothing(bye):
    """Done, or paused at --max_minutes (main notes it as 0): the others do the same."""
    watch, (first, second), lines, done = watched_by_process_0(3)
    first.sendall(bye)
    first.close()
    assert not done.wait(0.5) and lines == []
    assert watch.close(0)  # process 0 ends on its own
    assert second.recv(256) == b"bye 0\n"
    assert not watch.close(0)  # once
    assert not done.wait(0.3) and lines == []


def test_a_process_ending_on_its_own_meanwhile_keeps_its_own_line():
    """The same error found by every process at once: each ends on its own line."""
    watch, (first,), lines, done = watched_by_process_0(2)
    first.sendall(b"bye 1\n")
    time.sleep(0.05)
    watch.close(1)  # within the grace
    assert not done.wait(0.5) and lines == []


def watching_process_0(num_processes: int = 3):
    """Process 1's watch, connected to a stand-in process 0: (watch, process 0's side
    of the connection, recorded lines, event)."""
    lines, done = [], threading.Event()
    server = coordinator.listen(0)
    watch = peer_watch.PeerWatch(1, num_processes,
                                 address=("localhost", server.getsockname()[1]),
                                 timeout_s=10, end=recorded_end(lines, done))
    watch.start()
    server.settimeout(10)
    connection, _ = server.accept()
    server.close()
    connection.settimeout(10)
    assert connection.recv(256) == b"watch 1\n"
    return watch, connection, lines, done


@pytest.mark.parametrize("told, line", [
    (b"died 2\n", peer_watch.died_line(2, 3)),
    (b"stopped 2 1\n", peer_watch.stopped_line(2, 3, 1)),
    (b"", peer_watch.died_line(0, 3)),  # process 0 killed
    (b"bye 1\n", peer_watch.stopped_line(0, 3, 1)),  # process 0 stopped on an error
])
def test_a_process_ends_when_told_of_an_end_or_when_process_0_ends(told, line):
    _, connection, lines, done = watching_process_0()
    if told:
        connection.sendall(told)
    else:
        connection.close()
    assert done.wait(10)
    assert lines == [line]


def test_process_0_ending_on_its_own_ends_nothing_and_a_process_says_bye_with_its_status():
    _, connection, lines, done = watching_process_0()
    connection.sendall(b"bye 0\n")
    connection.close()
    assert not done.wait(0.5) and lines == []
    watch, connection, lines, done = watching_process_0()
    assert watch.close(3)
    assert connection.recv(256) == b"bye 3\n"
    assert not done.wait(0.3) and lines == []


def test_a_watch_that_cannot_connect_leaves_the_run_to_jax():
    lines, done = [], threading.Event()
    watch = peer_watch.PeerWatch(1, 2, address=("127.0.0.1", free_port()), timeout_s=1,
                                 end=recorded_end(lines, done))
    watch.start()
    watch._thread.join(10)
    assert not watch._thread.is_alive() and lines == []
    assert peer_watch.start(1, 2, "localhost:1", None, None, 1) is None  # no port told
    assert peer_watch.start(0, 1, "localhost:1", None, None, 1) is None  # alone


def test_the_noted_exit_status_of_a_system_exit(monkeypatch):
    monkeypatch.setattr(peer_watch, "_exit_status", 0)
    for code, status in ((None, 0), (3, 3), ("error: disk full", 1)):
        peer_watch.note_exit(code)
        assert peer_watch._exit_status == status


# Process 1 stops on an error at its checkpoint of step 20, as a host whose disk is full.
_FAILING_PROCESS = """
import sys
from causal_disent.runs import checkpoint

save = checkpoint.StageCheckpoints.save
def failing_save(self, state, step, **kwargs):
    if step >= 20:
        sys.exit("error: process 1 cannot write its checkpoint (a test's)")
    return save(self, state, step, **kwargs)
checkpoint.StageCheckpoints.save = failing_save

from absl import app
from causal_disent import cli, main
sys.argv[0] = "main"
app.run(main.main, flags_parser=cli.parse_flags_or_exit)
"""


@pytest.mark.parametrize("how", ["killed", "failed"])
def test_a_process_killed_or_failing_ends_the_other_in_one_line_within_seconds(tmp_path,
                                                                                how):
    """Two real processes. Killed: once process 0 has written its first row (both have
    joined JAX and the watch), process 1 is killed; JAX's heartbeat took about 100 s,
    then aborted process 0. Failed: process 1 stops on an error at its save of step
    20; both waited over six minutes (process 0 in the save, process 1 in JAX's
    shutdown). Each process now ends with its line, status 1, within seconds."""
    from tests.helpers import REPO_ROOT

    port = free_port()
    flags = [f"--config={REPO_ROOT / 'configs' / 'betavae_dsprites_synth.py'}:tiny",
             f"--workdir={tmp_path / 'w'}", "--config.vae.train.num_steps=100000",
             "--config.vae.train.checkpoint_every_steps=20", "--distributed",
             f"--coordinator_address=localhost:{port}", "--num_processes=2"]
    programs = [["-m", "causal_disent.main"],
                ["-c", _FAILING_PROCESS] if how == "failed" else ["-m", "causal_disent.main"]]
    processes = [subprocess.Popen(
        [sys.executable, *program, *flags, f"--process_id={process_id}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env=dict(os.environ, PYTHONPATH=str(REPO_ROOT), JAX_PLATFORMS="cpu"))
        for process_id, program in enumerate(programs)]
    started = time.monotonic()
    if how == "killed":
        rows = tmp_path / "w" / "metrics.jsonl"
        while not (rows.exists() and rows.stat().st_size) and time.monotonic() < started + 120:
            assert processes[0].poll() is None, processes[0].communicate()[1][-3000:]
            time.sleep(0.2)
        processes[1].kill()
    ended_at = time.monotonic()
    _, stderr_1 = processes[1].communicate(timeout=120)
    _, stderr_0 = processes[0].communicate(timeout=60)
    assert processes[0].returncode == 1, stderr_0[-3000:]
    if how == "killed":
        assert stderr_0.strip().splitlines()[-1] == peer_watch.died_line(1, 2)
        assert time.monotonic() - ended_at < 30
    else:
        assert (processes[1].returncode, stderr_1.strip().splitlines()[-1]) == (
            1, "error: process 1 cannot write its checkpoint (a test's)")
        assert stderr_0.strip().splitlines()[-1] == peer_watch.stopped_line(1, 2, 1)
        assert time.monotonic() - started < 120
