"""benchmarks/first_state_compilation.py: the first states it builds, its comparison
of two compilations, its refusals. (Its cases are `:small` configs, too slow to
compile twice in the suite; its records in results/ come from it.)"""

from __future__ import annotations

import importlib
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from causal_disent import cli
from causal_disent.train import resume, stages
from causal_disent.utils.sharding import make_data_mesh

first_state = importlib.import_module("benchmarks.first_state_compilation")


class _Stop(Exception):
    """Ends a run once the stage under test has made its first state."""


@pytest.mark.parametrize("path, overrides, last_stage", [
    ("configs/betavae_dsprites_synth.py:tiny", {"num_seeds": 2}, "vae"),
    ("configs/ctvae_shapes3d.py:tiny", {}, "ct"),
])
def test_the_benchmark_compiles_the_first_states_a_run_makes(path, overrides, last_stage,
                                                             tmp_path, monkeypatch):
    """Built through the run formats, each stage's first state is bitwise the one its
    run starts from (stacked seeds, and CT-VAE's stage 2 after its stage 1)."""
    config = cli.load_config_file(path, lock=False)
    config.update_from_flattened_dict(overrides)
    made, original = {}, resume.fresh_state

    def recording(create_state, mesh, stage=None):
        made[stage] = jax.device_get(original(create_state, mesh, stage))
        if stage == last_stage:
            raise _Stop
        return original(create_state, mesh, stage)

    monkeypatch.setattr(resume, "fresh_state", recording)
    with pytest.raises(_Stop):
        stages.run(config.copy_and_resolve_references(), str(tmp_path))
    built = {stage: jax.device_get(jax.jit(create)())
             for stage, create, _ in first_state.first_states(config)}
    assert list(built) == list(made) == list(config.stages)
    for stage in built:
        assert first_state.bitwise_equal(built[stage], made[stage]), stage


def test_both_compilations_run_and_one_ulp_is_a_difference():
    def create_state():
        return {"kernel": jax.random.normal(jax.random.key(0), (4, 4)), "step": jnp.array(0)}

    compile_s, run_s, state = first_state.compiled_and_run(
        create_state, make_data_mesh(), {"xla_backend_optimization_level": 1})
    assert compile_s > 0 and run_s > 0 and state["kernel"].shape == (4, 4)
    assert first_state.bitwise_equal(state, jax.tree.map(np.copy, state))
    moved = {**state, "kernel": np.nextafter(state["kernel"], np.inf)}
    assert not first_state.bitwise_equal(state, moved)
    assert not first_state.bitwise_equal(state, {"kernel": state["kernel"]})


@pytest.mark.parametrize("flags, message", [
    (["--cases=nonesuch"], "error: unknown case 'nonesuch'"),
    (["--compiler_options={level: 1}"], "error: --compiler_options is not a JSON object"),
    (["--compiler_options=[1]"], "error: --compiler_options must be a JSON object"),
])
def test_bad_flags_end_in_one_error_line(flags, message, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["first_state_compilation.py", *flags])
    with pytest.raises(SystemExit) as exit_:
        first_state.main()
    assert str(exit_.value).startswith(message) and "\n" not in str(exit_.value)
