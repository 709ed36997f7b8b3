"""utils/coordinator: where the --distributed processes meet over plain TCP before JAX
joins them (JAX's own timeouts end a process with a fatal log)."""

import os
import subprocess
import socket
import sys
import threading
import time
import types

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


def test_a_port_another_socket_listens_on_cannot_serve_the_coordinator():
    with socket.socket() as holder:
        holder.bind(("0.0.0.0", 0))
        holder.listen()
        port = holder.getsockname()[1]
        with pytest.raises(coordinator.RendezvousError) as error:
            coordinator.meet(f"localhost:{port}", num_processes=2, process_id=0,
                             timeout_s=1)
    assert str(error.value) == (
        f"process 0 cannot serve the coordinator on port {port} (Address already in "
        f"use; another job's coordinator?); give every process a --coordinator_address "
        f"with a free port")


def test_a_process_id_outside_the_job_is_refused_before_any_waiting():
    with pytest.raises(coordinator.RendezvousError, match=r"^--process_id=2 is not one "
                       r"of 0 to 1 \(--num_processes=2\); give each process its own"):
        coordinator.meet("localhost:1", num_processes=2, process_id=2, timeout_s=60)


def start_processes(port, greetings, timeout_s=10.0, stagger_s=0.0):
    """Threads joining process 0 at localhost:`port`, one per (process_id,
    num_processes), the i-th after i * `stagger_s` seconds; returns them and a dict
    i -> the error the i-th ended with (None when it went on)."""
    outcomes, threads = {}, []

    def process(index, process_id, num_processes):
        time.sleep(index * stagger_s)
        try:
            coordinator.join(f"localhost:{port}", process_id, num_processes, timeout_s,
                             retry_s=0.05)
            outcomes[index] = None
        except coordinator.RendezvousError as error:
            outcomes[index] = str(error)
    for index, (process_id, num_processes) in enumerate(greetings):
        threads.append(threading.Thread(target=process,
                                        args=(index, process_id, num_processes)))
        threads[-1].start()
    return threads, outcomes


def finish(threads):
    for thread in threads:
        thread.join(timeout=20)
        assert not thread.is_alive()


def test_every_process_goes_on_once_all_have_met_and_the_port_is_freed_for_jax():
    port = free_port()
    # Processes 1 and 2 start before process 0, and a port probe is not a process.
    threads, outcomes = start_processes(port, [(1, 3), (2, 3)])
    time.sleep(0.3)
    server = coordinator.listen(port)
    socket.create_connection(("localhost", port)).close()
    with socket.create_connection(("localhost", port)) as stranger:
        stranger.sendall(b"GET / HTTP/1.0\n")
    coordinator.gather(server, num_processes=3, timeout_s=10)
    finish(threads)
    assert outcomes == {0: None, 1: None}
    coordinator.listen(port).close()  # the port is free again


def test_a_process_that_never_joins_is_named_by_process_0_and_the_ones_that_came():
    server = coordinator.listen(0)
    port = server.getsockname()[1]
    threads, outcomes = start_processes(port, [(1, 4)])
    start = time.monotonic()
    with pytest.raises(coordinator.RendezvousError) as error:
        coordinator.gather(server, num_processes=4, timeout_s=1)
    assert 0.9 < time.monotonic() - start < 6
    finish(threads)
    assert str(error.value).startswith(
        "processes 2 and 3 of 4 did not join in 1 s; start every process with the same "
        "--coordinator_address and --num_processes=4 and its own --process_id (0 to 3), "
        "or raise --distributed_timeout")
    assert outcomes == {0: f"process 0 stopped: {error.value}"}


def test_a_process_that_gave_up_before_the_others_came_is_not_counted():
    server = coordinator.listen(0)
    port = server.getsockname()[1]
    early, early_outcome = start_processes(port, [(1, 3)], timeout_s=0.2)
    finish(early)  # it gives up waiting for process 2
    assert early_outcome[0].startswith(f"process 0 at localhost:{port} had not heard from")
    late, _ = start_processes(port, [(2, 3)], timeout_s=5)
    with pytest.raises(coordinator.RendezvousError, match="^process 1 of 3 did not join"):
        coordinator.gather(server, num_processes=3, timeout_s=2)
    finish(late)


@pytest.mark.parametrize("greetings, problem", [
    ([(1, 3), (1, 3)], "two processes were started with --process_id=1; give each process "
                       "its own --process_id, 0 (the coordinator) to 2"),
    ([(1, 3), (2, 2)], "process 2 was started with --num_processes=2 and process 0 with 3; "
                       "give every process the same --num_processes")])
def test_flags_that_disagree_stop_every_process_with_the_same_line(greetings, problem):
    server = coordinator.listen(0)
    threads, outcomes = start_processes(server.getsockname()[1], greetings, stagger_s=0.5)
    with pytest.raises(coordinator.RendezvousError) as error:
        coordinator.gather(server, num_processes=3, timeout_s=10)
    finish(threads)
    assert str(error.value) == problem
    assert outcomes == {0: f"process 0 stopped: {problem}", 1: f"process 0 stopped: {problem}"}


def test_no_process_0_is_one_reason_after_the_timeout():
    with pytest.raises(coordinator.RendezvousError,
                       match=r"^no coordinator answered at 127.0.0.1:\d+ in 0.3 s "
                             r"\(Connection refused\); start process 0"):
        coordinator.join(f"127.0.0.1:{free_port()}", 1, 2, timeout_s=0.3, retry_s=0.05)


def test_a_server_that_is_not_process_0_is_named_as_one():
    with socket.socket() as stranger:
        stranger.bind(("127.0.0.1", 0))
        stranger.listen()
        port = stranger.getsockname()[1]

        def answer_like_a_web_server():
            connection, _ = stranger.accept()
            with connection:
                connection.recv(256)
                connection.sendall(b"HTTP/1.0 400 Bad Request\r\n\r\n")
        thread = threading.Thread(target=answer_like_a_web_server)
        thread.start()
        with pytest.raises(coordinator.RendezvousError) as error:
            coordinator.join(f"127.0.0.1:{port}", 1, 2, timeout_s=10)
        thread.join()
    assert str(error.value) == (
        f"the coordinator at 127.0.0.1:{port} did not answer as a causal_disent process 0 "
        f"(HTTP/1.0 400 Bad Request); start process 0 with this version of "
        f"causal_disent, or fix --coordinator_address")


@pytest.fixture
def no_cluster(monkeypatch):
    """An environment where JAX detects no cluster, whatever machine runs the tests."""
    for name in list(os.environ):
        if name.startswith(("SLURM_", "OMPI_", "KUBERNETES_", "JAX_COORDINATOR_PORT")):
            monkeypatch.delenv(name)
    return monkeypatch


def test_a_slurm_task_is_detected_as_jax_would_detect_it_keeping_what_flags_give(no_cluster):
    assert coordinator.detect_cluster(None, None, None, timeout_s=60) is None
    for name, value in {"SLURM_JOB_ID": "4097", "SLURM_STEP_NODELIST": "node[003-005],gpu7",
                        "SLURM_NTASKS": "6", "SLURM_PROCID": "4", "SLURM_LOCALID": "1"}.items():
        no_cluster.setenv(name, value)
    slurm = coordinator.Origin("SLURM")
    # JAX's port for job 4097: 61440 + 4097 mod 4096.
    assert coordinator.detect_cluster(None, None, None, timeout_s=60) == coordinator.Cluster(
        slurm, "node003:61441", num_processes=6, process_id=4)
    no_cluster.setenv("JAX_COORDINATOR_PORT", "1234")
    assert coordinator.detect_cluster(None, None, None, timeout_s=60).address == "node003:1234"
    assert coordinator.detect_cluster("head:99", None, 2, timeout_s=60) == coordinator.Cluster(
        slurm, "head:99", num_processes=6, process_id=2)


def kubernetes_outside_a_pod() -> types.ModuleType:
    """The `kubernetes` package where the pod has no service account mounted: its
    in-cluster configuration fails as the real one does."""
    class ConfigException(Exception):
        pass

    def load_incluster_config():
        raise ConfigException("Service token file does not exist.")
    return types.SimpleNamespace(config=types.SimpleNamespace(
        load_incluster_config=load_incluster_config))


def test_a_kubernetes_pod_that_cannot_be_asked_is_one_reason_not_a_warning(no_cluster):
    no_cluster.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    no_cluster.setitem(sys.modules, "kubernetes", None)  # not installed
    with pytest.raises(coordinator.RendezvousError) as missing:
        coordinator.detect_cluster(None, None, None, timeout_s=60)
    assert str(missing.value) == (
        "Kubernetes environment detected, but the `kubernetes` package is not installed "
        "to enable automatic bootstrapping in this environment. To enable automatic "
        "bootstrapping, please install jax with the [k8s] extra; or give every process "
        "--coordinator_address=HOST:PORT (process 0's), --num_processes=N and its own "
        "--process_id (0 to N - 1)")
    no_cluster.setitem(sys.modules, "kubernetes", kubernetes_outside_a_pod())
    with pytest.raises(coordinator.RendezvousError) as refused:
        coordinator.detect_cluster(None, None, None, timeout_s=60)
    assert str(refused.value).startswith(
        "Kubernetes was detected but could not say where its processes are "
        "(ConfigException: Service token file does not exist); fix its set-up, or give "
        "every process --coordinator_address=HOST:PORT")


def test_a_detected_clusters_errors_say_what_to_change_in_its_set_up():
    slurm = coordinator.Origin("SLURM")
    server = coordinator.listen(0)
    port = server.getsockname()[1]
    with pytest.raises(coordinator.RendezvousError) as missing:
        coordinator.gather(server, num_processes=2, timeout_s=0.2, origin=slurm)
    assert str(missing.value) == (
        "process 1 of 2 did not join in 0.2 s; check that SLURM starts this command in "
        "each of its 2 processes (one failing at start-up leaves the others waiting), or "
        "raise --distributed_timeout")
    with pytest.raises(coordinator.RendezvousError) as absent:
        coordinator.join(f"127.0.0.1:{port}", 1, 2, timeout_s=0.2, retry_s=0.05, origin=slurm)
    assert str(absent.value).endswith(
        "check that SLURM's process 0 runs this command, or give every process "
        "--coordinator_address=HOST:PORT (process 0's)")
    with socket.socket() as holder:
        holder.bind(("0.0.0.0", 0))
        holder.listen()
        taken = holder.getsockname()[1]
        with pytest.raises(coordinator.RendezvousError) as busy:
            coordinator.meet(f"node003:{taken}", 2, 0, timeout_s=1, origin=slurm)
    assert str(busy.value).endswith(
        "another job's coordinator?); set JAX_COORDINATOR_PORT to a free port in every "
        "process's environment (or give every process --coordinator_address=HOST:PORT)")
    server = coordinator.listen(0)
    threads, _ = start_processes(server.getsockname()[1], [(1, 3), (1, 3)], stagger_s=0.3)
    with pytest.raises(coordinator.RendezvousError) as twice:
        coordinator.gather(server, num_processes=3, timeout_s=10, origin=slurm)
    finish(threads)
    assert str(twice.value).startswith(
        "two processes say they are process 1; another job's processes may have reached "
        "this coordinator's port: set JAX_COORDINATOR_PORT")


def test_a_peer_that_meets_and_never_starts_jax_ends_process_0_in_one_line(tmp_path):
    """Process 1 greets process 0 and then never joins JAX (as a process that dies right
    after the rendezvous): JAX's coordination service would wait out its deadline and
    abort with a fatal log and a C++ stack trace; the process ends in one line."""
    from tests.helpers import REPO_ROOT

    port = free_port()
    command = [sys.executable, "-m", "causal_disent.main",
               f"--config={REPO_ROOT / 'configs' / 'betavae_dsprites_synth.py'}:tiny",
               f"--workdir={tmp_path / 'w'}", "--distributed",
               f"--coordinator_address=localhost:{port}", "--num_processes=2",
               "--process_id=0", "--distributed_timeout=3"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=dict(os.environ, PYTHONPATH=str(REPO_ROOT),
                                                   JAX_PLATFORMS="cpu"))
    coordinator.join(f"localhost:{port}", 1, 2, timeout_s=60, retry_s=0.05)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 1, stderr[-3000:]
    assert stderr.strip().splitlines() == [
        f"error: --distributed: the processes met, but JAX's coordination service at "
        f"localhost:{port} did not join all 2 in 3 s: a process may have ended after the "
        f"meeting (see its output), or the port is blocked between hosts; start every "
        f"process again, or raise --distributed_timeout"]
    assert not (tmp_path / "w").exists()
