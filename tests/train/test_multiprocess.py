"""Multi-process data parallelism for real: 2 processes x 4 CPU devices (a local
coordinator, gloo collectives, launch/local_multiprocess.sh) train exactly as 1
process with 8 devices on the same global batch: the same loss in every metrics row,
the same final parameters, the same results. FactorVAE (its permutation over the
global batch, the run stopped and resumed from an Orbax checkpoint saved and
restored by both processes), CausalVAE and, among the long checks that the default
suite leaves out (`pytest -m long`, about 4 minutes on 2 cores), CT-VAE's two stages
with every stage-2 mode.

Each row of metrics.jsonl appears once, so process 1 wrote no second copy."""

import json
import os
import subprocess
import sys

import jax
import numpy as np
import orbax.checkpoint as ocp
import pytest

from causal_disent.runs.checkpoint import checkpoint_dir
from tests.helpers import REPO_ROOT

LAUNCHER = REPO_ROOT / "launch" / "local_multiprocess.sh"
CT_FLAGS = ["--config=configs/ctvae_shapes3d.py:tiny", "--config.ct.optim.batch_size=8",
            "--config.ct.train.eval_batch_size=8"]


def launch(num_processes: int, devices: int, workdir, *flags):
    env = dict(os.environ, PYTHON=sys.executable, PYTHONPATH=str(REPO_ROOT))
    # The processes compile the same programs at once; the worker's compilation cache
    # (tests/conftest.py) writes its entries without a lock.
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    result = subprocess.run(["bash", str(LAUNCHER), str(num_processes), str(devices),
                             f"--workdir={workdir}", *flags],
                            env=env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=900)
    logs = [(workdir.parent / f"{workdir.name}.process_{i}.log").read_text()
            for i in range(num_processes)]
    assert result.returncode == 0, "\n".join(
        f"--- process {i}:\n{log[-3000:]}" for i, log in enumerate(logs))
    return logs


def final_params(workdir, stage):
    """The latest checkpoint's parameters on this process's one device (they were
    saved sharded over 8 devices, so orbax needs the target placement)."""
    device = jax.sharding.SingleDeviceSharding(jax.devices()[0])
    with ocp.CheckpointManager(checkpoint_dir(workdir, stage),
                               item_handlers={"state": ocp.StandardCheckpointHandler()}) as manager:
        step = manager.latest_step()
        target = jax.tree.map(lambda leaf: jax.ShapeDtypeStruct(leaf.shape, leaf.dtype, sharding=device),
                              manager.item_metadata(step)["state"])
        restored = manager.restore(step, args=ocp.args.Composite(
            state=ocp.args.StandardRestore(target)))
    return restored.state["params"]


def metric_rows(workdir):
    return [json.loads(line) for line in (workdir / "metrics.jsonl").read_text().splitlines()]


def row_key(row):
    """(stage, step, "test" for a validation row, else None)."""
    return row["stage"], row["step"], row.get("split")


def assert_same_run(single, multi, stages, rtol=1e-5):
    """The same training and validation rows (losses, gradient norms, curve scores),
    final params and results."""
    rows_single, rows_multi = metric_rows(single), metric_rows(multi)
    assert list(map(row_key, rows_multi)) == list(map(row_key, rows_single))
    assert len(set(map(row_key, rows_multi))) == len(rows_multi)  # each once
    for one, two in zip(rows_single, rows_multi):
        for key in ("loss", "grad_norm", "test_nll", "test_psnr", "mic", "action_accuracy"):
            if key in one:
                np.testing.assert_allclose(two[key], one[key], rtol=rtol, atol=1e-6,
                                           err_msg=f"{key} at {one['stage']} step {one['step']}")
    for stage in stages:
        jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-5),
                     final_params(multi, stage), final_params(single, stage))
    results_single = json.loads((single / "results.json").read_text())
    results_multi = json.loads((multi / "results.json").read_text())
    assert results_multi.keys() == results_single.keys()
    for stage in stages:
        assert results_multi[stage]["steps"] == results_single[stage]["steps"]


@pytest.fixture(scope="module")
def ct_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("multiprocess_ct")
    single, multi = root / "one_process", root / "two_processes"
    launch(1, 8, single, *CT_FLAGS)
    # Stage 1 stopped at step 3 (its first checkpoint), then the whole run resumes.
    launch(2, 4, multi, *CT_FLAGS, "--config.stages=('mcqvae',)",
           "--config.mcqvae.train.num_steps=3")
    logs = launch(2, 4, multi, *CT_FLAGS)
    return single, multi, logs


@pytest.mark.long
def test_two_processes_train_ctvae_as_one_process_with_eight_devices(ct_runs):
    single, multi, logs = ct_runs
    assert all(f"[process {i}] [mcqvae] resuming from the checkpoint of step 3 of 6" in log
               for i, log in enumerate(logs))  # restored by both
    modes = {row["mode"] for row in metric_rows(multi)
             if row["stage"] == "ct" and "split" not in row}
    assert modes == {"standard", "action", "causal"}
    assert_same_run(single, multi, ["mcqvae", "ct"])


def test_two_processes_train_factor_vae_as_one(tmp_path):
    """With the training images on the devices (each process places the whole table
    on its devices: the images its steps draw, those after step 2 when resumed) and
    two steps a call; CT-VAE and CausalVAE run the host pipeline, one step a call."""
    flags = ["--config=configs/factorvae_dsprites_synth.py:tiny",
             "--config.vae.train.device_data=on", "--config.vae.train.steps_per_call=2"]
    launch(1, 8, tmp_path / "one_process", *flags)
    # Stopped at step 2 (its checkpoint), then resumed to the end.
    launch(2, 4, tmp_path / "two_processes", *flags, "--config.vae.train.num_steps=2")
    logs = launch(2, 4, tmp_path / "two_processes", *flags)
    assert all(f"[process {i}] [vae] resuming from the checkpoint of step 2 of" in log
               for i, log in enumerate(logs))  # restored by both
    assert_same_run(tmp_path / "one_process", tmp_path / "two_processes", ["vae"])


def test_two_processes_train_causal_vae_as_one(tmp_path):
    flags = ["--config=configs/causalvae_pendulum.py:tiny"]
    launch(1, 8, tmp_path / "one_process", *flags)
    launch(2, 4, tmp_path / "two_processes", *flags)
    assert_same_run(tmp_path / "one_process", tmp_path / "two_processes", ["causalvae"])
