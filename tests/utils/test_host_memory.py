"""A training call's memory against the host's (utils/host_memory.py): what Linux
says is left, what XLA plans for a compiled call, and the runner refusing a call that
cannot fit before it runs (on a CPU the kernel would kill the process instead)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from causal_disent.train import runner
from causal_disent.utils import host_memory
from causal_disent.utils.sharding import make_data_mesh

GIB = 2**30


def test_available_memory_is_the_least_of_the_host_and_its_container(monkeypatch, tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       25000000 kB\nMemAvailable:   20971520 kB\n")
    limit, usage = tmp_path / "memory.max", tmp_path / "memory.current"
    monkeypatch.setattr(host_memory, "_MEMINFO", meminfo)
    monkeypatch.setattr(host_memory, "_CGROUP_LIMITS", ((limit, usage),))
    assert host_memory.available_bytes() == 20 * GIB  # no cgroup files
    limit.write_text("max\n")
    usage.write_text(f"{GIB}\n")
    assert host_memory.available_bytes() == 20 * GIB  # no limit
    limit.write_text(f"{8 * GIB}\n")
    assert host_memory.available_bytes() == 7 * GIB
    meminfo.unlink()
    assert host_memory.available_bytes() == 7 * GIB
    limit.unlink()
    assert host_memory.available_bytes() is None  # not Linux: nothing to say


def test_a_calls_new_memory_is_its_outputs_and_temporaries_less_donated_inputs():
    vector = jnp.ones((1000,), jnp.float32)
    outer = jax.jit(jnp.outer).trace(vector, vector).lower().compile()
    assert host_memory.new_bytes(outer) >= 1000 * 1000 * 4
    square = jnp.ones((1000, 1000), jnp.float32)
    doubled = jax.jit(lambda x: x * 2, donate_argnums=0).trace(square).lower().compile()
    assert host_memory.new_bytes(doubled) < 1000 * 1000 * 4  # written over its input


def compiled_outer():
    vector = jnp.ones((1000,), jnp.float32)
    return jax.jit(jnp.outer).trace(vector, vector).lower().compile()


def test_a_call_that_cannot_fit_is_refused_and_a_tight_one_noted(monkeypatch, capsys):
    needed = host_memory.new_bytes(compiled_outer())
    monkeypatch.setattr(host_memory, "available_bytes", lambda: needed - 1)
    with pytest.raises(MemoryError, match=r"^the step needs 0.0 GiB beyond its inputs, by "
                                          r"XLA's plan of it, and the host has 0.0 GiB "
                                          r"available$"):
        host_memory.check_fits(compiled_outer(), "the step", "vae")
    monkeypatch.setattr(host_memory, "available_bytes", lambda: needed + 1)
    host_memory.check_fits(compiled_outer(), "the step", "vae")
    assert ("[vae] note: the step needs 0.0 GiB beyond its inputs" in capsys.readouterr().out)
    monkeypatch.setattr(host_memory, "available_bytes", lambda: 10 * needed)
    host_memory.check_fits(compiled_outer(), "the step", "vae")
    assert "note" not in capsys.readouterr().out
    # A checkpoint written in the background costs twice the state beside the calls
    # that follow it: just over the host fails, just under passes.
    state_bytes = 5 * needed
    monkeypatch.setattr(host_memory, "available_bytes", lambda: needed + 2 * state_bytes - 1)
    with pytest.raises(MemoryError, match=r"the step needs 0.0 GiB beyond its inputs, by "
                                          r"XLA's plan of it, and a checkpoint being written "
                                          r"0.0 GiB beside it \(2 times the state's 0.0 GiB\); "
                                          r"the host has"):
        host_memory.check_fits(compiled_outer(), "the step", "vae",
                               saved_state_bytes=state_bytes)
    monkeypatch.setattr(host_memory, "available_bytes", lambda: needed + 2 * state_bytes)
    host_memory.check_fits(compiled_outer(), "the step", "vae", saved_state_bytes=state_bytes)
    assert host_memory.array_bytes({"a": jnp.ones((3, 4)), "b": [np.ones(5, np.uint8)]}) \
        == 3 * 4 * 4 + 5


def test_the_runner_refuses_a_step_the_host_cannot_hold_before_running_it(monkeypatch):
    """The step is compiled ahead of its first call and checked; the calls then run
    that executable, with the values of the plain jitted step."""
    mesh = make_data_mesh()

    def step(state, batch, rng):
        del rng
        new = state + jnp.outer(batch["x"], batch["x"]).sum()
        return new, {"loss": new}

    training = runner.Training(steps={"step": step}, batches=[], rng=jax.random.key(0))
    batch = {"x": np.arange(8 * mesh.size, dtype=np.float32)}
    monkeypatch.setattr(host_memory, "available_bytes", lambda: 0)
    step_fn, _ = runner.compiled_step_fn(training, mesh, "toy")
    with pytest.raises(MemoryError, match="the training step needs"):
        step_fn(jnp.zeros(()), batch, 0)

    monkeypatch.setattr(host_memory, "available_bytes", lambda: 2**50)
    step_fn, _ = runner.compiled_step_fn(training, mesh, "toy")
    state = jnp.zeros(())
    for call in range(2):
        state, metrics = step_fn(state, batch, call)
    expected = 2 * np.outer(batch["x"], batch["x"]).sum()
    assert float(state) == float(metrics["loss"]) == expected



class _CountedJit:
    """A jitted function that counts the programs compiled ahead from it."""

    def __init__(self, function):
        self.jitted, self.compiles = jax.jit(function), 0

    def trace(self, *args):
        self.compiles += 1
        return self.jitted.trace(*args)


def test_an_evaluation_compiled_ahead_is_refused_before_it_runs_and_else_runs_as_jitted(
        monkeypatch, capsys):
    """`compiled_ahead` (the evaluations' jitted functions): one program for each kind
    of input, held against the host before it first runs; the values are the jitted
    function's."""
    counted = _CountedJit(lambda params, x: jnp.outer(x, x) * params["scale"])
    params, x = {"scale": jnp.float32(2.0)}, np.arange(1000, dtype=np.float32)
    monkeypatch.setattr(host_memory, "available_bytes", lambda: 4 * 1000 * 1000 - 1)
    call = host_memory.compiled_ahead(counted, "an evaluation batch", field="eval_batch_size")
    with pytest.raises(MemoryError, match=r"^an evaluation batch needs 0.0 GiB beyond its "
                                          r"inputs, by XLA's plan of it"):
        call(params, x)  # its output alone is 4 MB

    monkeypatch.setattr(host_memory, "available_bytes", lambda: 5 * 1000 * 1000)
    call = host_memory.compiled_ahead(counted, "an evaluation batch", field="eval_batch_size")
    counted.compiles = 0
    for shift in range(3):
        np.testing.assert_array_equal(call(params, x + shift), counted.jitted(params, x + shift))
    assert counted.compiles == 1
    note = capsys.readouterr().out  # 4 of 5 MB: tight
    assert "note: an evaluation batch needs" in note and "lower eval_batch_size" in note
    call(params, x[:10])  # another kind of input: compiled and checked again
    assert counted.compiles == 2

