"""A stage that runs out of memory, on its devices or the host, ends in one line naming
the fields that size it (train/out_of_memory.py), not in XLA's traceback."""

import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from causal_disent import cli
from causal_disent.train import out_of_memory, stages, vae_stage


def device_out_of_memory() -> jax.errors.JaxRuntimeError:
    """XLA's own error for a buffer no device holds (10 TB)."""
    try:
        jax.block_until_ready(jnp.zeros((10**13,), jnp.uint8))
    except jax.errors.JaxRuntimeError as error:
        return error
    pytest.skip("this machine allocated 10 TB")


def host_out_of_memory() -> MemoryError:
    try:
        np.empty((10**14,), np.uint8)
    except MemoryError as error:
        return error
    pytest.skip("this machine allocated 100 TB")


def test_out_of_memory_is_xlas_resource_exhausted_or_numpys_memory_error():
    assert out_of_memory.is_out_of_memory(device_out_of_memory())
    assert out_of_memory.is_out_of_memory(host_out_of_memory())
    dispatch = jax.errors.JaxRuntimeError("INTERNAL: Error dispatching computation: Out of "
                                          "memory allocating 25600102852 bytes.")
    assert out_of_memory.is_out_of_memory(dispatch)  # XLA:CPU, a running program's buffer
    config = cli.load_config_file("configs/betavae_dsprites_synth.py:tiny")
    assert out_of_memory.explain("vae", config, dispatch).startswith(
        "stage vae ran out of CPU device memory (Out of memory allocating 25600102852 bytes, "
        "25.6 GB); lower")
    assert not out_of_memory.is_out_of_memory(jax.errors.JaxRuntimeError("INTERNAL: other"))
    assert not out_of_memory.is_out_of_memory(ValueError("RESOURCE_EXHAUSTED"))


def test_a_stage_out_of_memory_is_one_line_naming_its_batch_sizes(monkeypatch, tmp_path):
    """stages.run turns it into the InvalidRunError that main prints as one line; the
    stage's own validation still runs first (and found nothing wrong)."""
    def run_out_of_memory(config, workdir, mesh, mode):
        raise device_out_of_memory()

    stage = types.SimpleNamespace(validate=vae_stage.validate, run=run_out_of_memory,
                                  TRAINS_MANY_SEEDS=True)
    monkeypatch.setitem(stages.STAGES, "vae", (stage, stages.STAGES["vae"][1]))
    config = cli.load_config_file("configs/betavae_dsprites_synth.py:tiny")
    with pytest.raises(stages.InvalidRunError) as error:
        stages.run(config, tmp_path)
    assert str(error.value) == (
        "stage vae ran out of CPU device memory (Out of memory allocating 10000000000000 "
        "bytes, 10,000.0 GB); lower vae.optim.batch_size (8), vae.train.eval_batch_size "
        "(8) or the sizes in vae.model, or train on more devices; the checkpoints saved "
        "so far are intact: rerun the same command to resume")


def test_the_host_running_out_names_the_seeds_too():
    config = cli.load_config_file("configs/betavae_dsprites_synth.py:tiny", lock=False)
    config.num_seeds = 4
    line = out_of_memory.explain("vae", config, host_out_of_memory())
    assert line.startswith("stage vae ran out of the host's memory (Unable to allocate ")
    assert ("lower vae.optim.batch_size (8), vae.train.eval_batch_size (8), num_seeds (4) or "
            "the sizes in vae.model," in line)
