"""One run per workdir (runs/workdir_lock.py): a second run is refused with the
holder named while the first holds it, and allowed once the holder exits or dies."""

import os
import signal
import subprocess
import sys

import pytest

from causal_disent.runs import workdir_lock
from causal_disent.train import stages
from tests.helpers import REPO_ROOT, tiny_config

HOLD_FOREVER = (
    "import sys, time\n"
    "from causal_disent.runs import workdir_lock\n"
    "with workdir_lock.held(sys.argv[1]):\n"
    "    print('held', flush=True)\n"
    "    time.sleep(600)\n"
)


def holding_process(workdir):
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), JAX_PLATFORMS="cpu")
    process = subprocess.Popen([sys.executable, "-c", HOLD_FOREVER, str(workdir)], env=env,
                               stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline() == "held\n"
    return process


def test_a_second_run_is_refused_while_another_holds_the_workdir_and_runs_once_it_dies(
        tmp_path):
    holder = holding_process(tmp_path)
    try:
        with pytest.raises(stages.InvalidRunError,
                           match=rf"workdir {tmp_path} is in use by another run \(pid "
                                 rf"{holder.pid} on host .*, started .*\); wait for it"):
            stages.run(tiny_config(), tmp_path)
        assert not (tmp_path / "metrics.jsonl").exists()
        assert not (tmp_path / "config.json").exists()
    finally:
        holder.send_signal(signal.SIGKILL)  # dies holding it
        holder.wait()
    with workdir_lock.held(tmp_path):  # the kernel released a dead holder's lock
        pass


def test_the_lock_is_released_when_its_run_ends(tmp_path):
    with workdir_lock.held(tmp_path):
        with pytest.raises(workdir_lock.WorkdirBusy, match=f"pid {os.getpid()} on host"):
            with workdir_lock.held(tmp_path):
                pass
    with workdir_lock.held(tmp_path):
        pass
