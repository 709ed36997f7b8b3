"""benchmarks/first_state_compilation.py: its cases cut short, its comparison of two
compilations, its refusals. (Its runs are whole stages at `:small`, too slow for the
suite; its records in results/ come from it.)"""

from __future__ import annotations

import importlib
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from causal_disent.train import resume
from causal_disent.utils.sharding import make_data_mesh

first_state = importlib.import_module("benchmarks.first_state_compilation")


def test_every_stage_of_a_case_is_cut_to_two_steps_and_64_test_images():
    config = first_state.configured("ctvae")
    for stage in ("mcqvae", "ct"):
        train = config[stage].train
        assert train.num_steps == first_state.STEPS * train.steps_per_call
        assert train.eval_every_steps == 0 and train.num_epochs == 0
        assert train.checkpoint_every_steps == train.steps_per_call
    assert config.mcqvae.train.num_eval_images == 64 and config.ct.eval.num_test_pairs == 64
    assert config.ct.train.code_source == "encode"  # no code cache of the whole dataset
    assert first_state.configured("betavae_s8").num_seeds == 8


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


def test_the_first_states_a_run_makes_are_kept_with_their_stage():
    """The hook over train/resume.py's fresh_state, called as the stage runner calls it;
    it went stale once when fresh_state gained its stage argument."""
    def create_state():
        return {"kernel": jnp.ones((2, 2)), "step": jnp.array(0)}

    mesh = make_data_mesh()
    with first_state.kept_first_states() as kept:
        state = resume.fresh_state(create_state, mesh, "vae")
    assert kept == [("vae", create_state, mesh)]
    np.testing.assert_array_equal(state["kernel"], np.ones((2, 2)))
    assert resume.fresh_state.__name__ == "fresh_state"  # put back


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
