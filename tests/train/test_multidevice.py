"""1 device vs 8 forced CPU devices: same global batch, same result (stage 1, every
stage-2 mode, a code cache built over the devices, and FactorVAE's step with its
permutation over the global batch)."""

import json
import os
import subprocess
import sys

from tests.helpers import REPO_ROOT


def test_eight_devices_match_one_device():
    flags = f"--xla_force_host_platform_device_count=8 {os.environ.get('XLA_FLAGS', '')}"
    env = dict(os.environ, XLA_FLAGS=flags.strip(), PYTHONPATH=str(REPO_ROOT),
               JAX_PLATFORMS="cpu")
    result = subprocess.run(
        [sys.executable, str(REPO_ROOT / "tests" / "train" / "multidevice_check.py")],
        env=env, capture_output=True, text=True, timeout=600, cwd=REPO_ROOT,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["losses_1"][-1] < report["losses_1"][0]  # it trains
    assert report["max_loss_diff"] < 1e-5, report
    assert report["max_param_diff"] < 1e-5, report
    assert "not divisible by the 8 devices" in report["indivisible_batch_error"]
    assert set(report["ct_max_diff_per_mode"]) == {"standard", "action", "causal"}
    assert max(report["ct_max_diff_per_mode"].values()) < 1e-6, report  # SGD: lr times the gradients' difference
    differences, distinct = report["code_cache_differences_and_distinct_codes"]
    assert differences == 0 and distinct > 1, report
    # The host memory a CPU call needs counts every device's buffers (utils/host_memory.py).
    assert report["planned_copies_on_1_and_8_devices"] == [1.0, 8.0], report
    factor = report["compare_factor_vae"]
    assert factor["groups"] == ["discriminator", "vae"], factor
    assert factor["max_relative_loss_diff"] < 1e-6, factor
    assert factor["max_param_diff"] < 1e-5, factor
    assert factor["permutation_equals_unsharded"], factor
    assert factor["rows_from_another_shard"] > 0, factor
