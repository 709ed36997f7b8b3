"""train/resume.py's fresh state: compiled with FIRST_STATE_COMPILER_OPTIONS (a
short compilation for a program that runs once), it is the state XLA's default
compilation makes, bit for bit."""

import flax.linen as nn
import jax
import numpy as np
import optax
import pytest
from flax.training.train_state import TrainState

from causal_disent.train import resume
from causal_disent.utils.sharding import make_data_mesh, replicated


class Initialisers(nn.Module):
    """The initialisers the library's models draw from (models/): LeCun normal (a
    truncated normal, whose float maths moved by a few ulps in about 4 % of the values at
    LLVM's -O0), Glorot uniform, normal and uniform parameters."""

    @nn.compact
    def __call__(self, images):
        x = nn.Conv(32, (3, 3))(images)
        x = nn.Dense(24, kernel_init=nn.initializers.glorot_uniform())(x.reshape(len(x), -1))
        edges = self.param("edges", nn.initializers.normal(1.0), (16, 16))
        codebook = self.param("codebook", nn.initializers.uniform(), (64, 8))
        return x.sum() + edges.sum() + codebook.sum()


def create_state():
    model = Initialisers()
    params = model.init(jax.random.key(3), np.zeros((1, 8, 8, 16), np.float32))["params"]
    return TrainState.create(apply_fn=model.apply, params=params, tx=optax.adam(1e-3))


def bytes_of(state) -> list[bytes]:
    return [np.asarray(leaf).tobytes() for leaf in jax.tree.leaves(jax.device_get(state))]


@pytest.fixture
def optimising():
    """XLA's own optimisation levels, which the tests' JAX_DISABLE_MOST_OPTIMIZATIONS
    otherwise lowers for every program."""
    before = jax.config.read("jax_disable_most_optimizations")
    jax.config.update("jax_disable_most_optimizations", False)
    yield
    jax.config.update("jax_disable_most_optimizations", before)


def test_the_fresh_state_is_the_default_compilations_to_the_bit(optimising):
    mesh = make_data_mesh()
    assert resume.FIRST_STATE_COMPILER_OPTIONS.get(mesh.devices.flat[0].platform)  # on CPUs
    default = jax.jit(create_state, out_shardings=replicated(mesh))()
    assert bytes_of(resume.fresh_state(create_state, mesh)) == bytes_of(default)


def test_the_fresh_state_compiles_with_the_options_of_its_devices_platform(
        optimising, monkeypatch):
    mesh = make_data_mesh()
    platform = mesh.devices.flat[0].platform
    monkeypatch.setitem(resume.FIRST_STATE_COMPILER_OPTIONS, platform,
                        {"xla_no_such_option_here": True})
    with pytest.raises(Exception, match="xla_no_such_option_here"):
        resume.fresh_state(create_state, mesh)
    jax.config.update("jax_disable_most_optimizations", True)  # as in the tests
    assert bytes_of(resume.fresh_state(create_state, mesh))  # compiled as every program


def test_a_first_state_the_host_cannot_hold_is_refused_before_it_is_made(monkeypatch):
    """3000 stacked `:small` seeds were killed (status 137) making their state."""
    from causal_disent.utils import host_memory

    monkeypatch.setattr(host_memory, "available_bytes", lambda: 0)
    with pytest.raises(MemoryError, match="^the model's first state needs"):
        resume.fresh_state(create_state, make_data_mesh(), "vae")
