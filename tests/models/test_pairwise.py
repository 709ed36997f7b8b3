"""The fused pairwise readout equals its direct definition, values and gradients."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from causal_disent.models.pairwise import (
    pairwise_leaky_readout,
    reference_pairwise_leaky_readout,
)


@pytest.mark.parametrize("with_edge", [False, True])
def test_matches_reference_values_and_gradients(with_edge):
    rng = np.random.default_rng(0)
    batch, rows, cols, hidden = 3, 5, 6, 7
    args = [
        jnp.asarray(rng.normal(size=shape), jnp.float32)
        for shape in [(batch, rows, hidden), (batch, cols, hidden), (batch, hidden)]
    ]
    if with_edge:
        args += [
            jnp.asarray(rng.uniform(size=(batch, rows, cols)), jnp.float32),
            jnp.asarray(rng.normal(size=(batch, hidden)), jnp.float32),
        ]
    upstream = jnp.asarray(rng.normal(size=(batch, rows, cols)), jnp.float32)

    def fused(*a):
        return pairwise_leaky_readout(a[0], a[1], a[2], 0.2, *a[3:])

    def reference(*a):
        return reference_pairwise_leaky_readout(a[0], a[1], a[2], 0.2, *a[3:])

    np.testing.assert_allclose(fused(*args), reference(*args), rtol=1e-5, atol=1e-5)
    argnums = tuple(range(len(args)))
    got = jax.grad(lambda *a: jnp.sum(fused(*a) * upstream), argnums)(*args)
    want = jax.grad(lambda *a: jnp.sum(reference(*a) * upstream), argnums)(*args)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("working_set_bytes", [1, 2 * 6 * 7 * 4, 3 * 6 * 7 * 4])
def test_rows_per_step_does_not_change_the_result(monkeypatch, working_set_bytes):
    """6 receivers in forward steps of 1, 2 or 3 rows (divisors of 6) equal the
    reference, values and gradients."""
    from causal_disent.models import pairwise

    monkeypatch.setattr(pairwise, "_FORWARD_WORKING_SET_BYTES", working_set_bytes)
    rng = np.random.default_rng(1)
    row, col = (jnp.asarray(rng.normal(size=(3, n, 7)), jnp.float32) for n in (6, 6))
    kernel = jnp.asarray(rng.normal(size=(3, 7)), jnp.float32)
    assert pairwise._rows_per_step(6, 6 * 7 * 4, working_set_bytes) == max(
        1, working_set_bytes // (6 * 7 * 4))

    def loss(fn, *a):
        return jnp.sum(fn(*a, 0.2) ** 2)

    got = jax.value_and_grad(lambda *a: loss(pairwise_leaky_readout, *a), (0, 1, 2))(row, col, kernel)
    want = jax.value_and_grad(lambda *a: loss(reference_pairwise_leaky_readout, *a), (0, 1, 2))(row, col, kernel)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
    for g, w in zip(got[1], want[1]):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


def test_rows_per_step_is_the_largest_fitting_divisor():
    from causal_disent.models.pairwise import _rows_per_step

    assert _rows_per_step(64, 100, 1000) == 8  # 10 fit; 8 is the largest divisor <= 10
    assert _rows_per_step(7, 100, 600) == 1  # 7 is prime: one row a step
    assert _rows_per_step(64, 10**9, 1) == 1  # a row larger than the budget still runs
    assert _rows_per_step(64, 1, 10**9) == 64
