"""The launchers in launch/: valid bash, and the TPU script's gcloud commands (its
dry run). local_multiprocess.sh runs for real in tests/train/test_multiprocess.py;
SLURM and Cloud TPUs are not available to the tests."""

import os
import subprocess

import pytest

from tests.helpers import REPO_ROOT

SCRIPTS = sorted((REPO_ROOT / "launch").iterdir())


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.name for s in SCRIPTS])
def test_launcher_is_valid_bash(script):
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0


def test_tpu_script_creates_runs_on_every_worker_and_deletes():
    env = dict(os.environ, DRY_RUN="1", CREATE="1", DELETE="1", SPOT="1", PROJECT="p",
               ACCELERATOR_TYPE="v4-32", TPU_NAME="slice", ZONE="us-central2-b",
               WORKDIR="/mnt/shared/run", REPO_URL="https://example.org/repo.git", REF="abc123")
    result = subprocess.run(["bash", str(REPO_ROOT / "launch" / "tpu_pod.sh"),
                             "configs/ctvae_shapes3d.py", "--config.seed=1"],
                            env=env, capture_output=True, text=True, cwd=REPO_ROOT)
    assert result.returncode == 0, result.stderr
    create, ssh, delete = result.stdout.strip().splitlines()
    assert create == ("gcloud compute tpus tpu-vm create slice --zone=us-central2-b --project=p "
                      "--accelerator-type=v4-32 --version=tpu-ubuntu2204-base --spot")
    assert ssh.startswith("gcloud compute tpus tpu-vm ssh slice --zone=us-central2-b --project=p "
                          "--worker=all")
    assert "--workdir=\\'/mnt/shared/run\\' --distributed --config.seed=1" in ssh
    assert "git checkout -q \\'abc123\\'" in ssh
    assert delete == "gcloud compute tpus tpu-vm delete slice --zone=us-central2-b --project=p --quiet"


def test_tpu_script_needs_its_settings():
    env = {key: value for key, value in os.environ.items() if key not in {"TPU_NAME", "ZONE"}}
    result = subprocess.run(["bash", str(REPO_ROOT / "launch" / "tpu_pod.sh"), "c.py"],
                            env=env, capture_output=True, text=True, cwd=REPO_ROOT)
    assert result.returncode != 0 and "set TPU_NAME" in result.stderr
