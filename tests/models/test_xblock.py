"""The XBlock (models/xblock.py): its masked dependence (Jacobians), the triangular
solve, the causal order, the mask's two modes, bad fields refused, and a VAE with
an XBlock (the XVAE's module)."""

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest

from causal_disent import models
from causal_disent.models.vae import VAE
from causal_disent.models.xblock import XBlock

UNITS, SIZE = 5, 2
# Unit 3 may not read unit 0, unit 4 may read only unit 1: the test's zero gates.
ALLOWED = tuple(tuple(int(j < i and (i, j) not in {(3, 0), (4, 0), (4, 2), (4, 3)})
                      for j in range(UNITS)) for i in range(UNITS))


@pytest.fixture(scope="module")
def block_and_params():
    block = XBlock(num_units=UNITS, unit_size=SIZE, hidden=16, allowed_parents=ALLOWED)
    params = block.init(jax.random.key(0), jnp.zeros((1, UNITS)))["params"]
    # Random mask logits, so that the gates are neither 0 nor equal.
    params = {**params, "mask_logits": jax.random.normal(jax.random.key(1), (UNITS, UNITS))}
    return block, params


def random_inputs(seed, batch=3):
    keys = jax.random.split(jax.random.key(seed))
    return (jax.random.normal(keys[0], (batch, UNITS, SIZE)),
            jax.random.normal(keys[1], (batch, UNITS)))


def test_unit_i_reads_parent_j_only_where_its_gate_is_open(block_and_params):
    block, params = block_and_params
    mask = block.apply({"params": params}, method=block.parent_mask)
    for seed in range(3):
        causes, noise = random_inputs(seed)

        def step(z, n=noise):
            return block.apply({"params": params}, z, n, mask, method=block.structural_map)

        # [B, i, size_out, B', j, size_in] -> one example's block of unit i on unit j.
        jacobian = jax.jacobian(step)(causes)
        per_pair = jnp.abs(jacobian[0, :, :, 0]).sum(axis=(1, 3))  # [i, j]
        closed = np.asarray(mask) == 0  # j >= i or not allowed
        assert closed.sum() == UNITS * (UNITS + 1) // 2 + 4
        np.testing.assert_array_equal(np.asarray(per_pair)[closed], 0.0)
        assert np.all(np.asarray(per_pair)[~closed] > 0)  # open gates do carry
        assert float(jnp.abs(jacobian[0, :, :, 1:]).sum()) == 0.0  # no cross-example


def test_the_block_solves_the_triangular_system(block_and_params):
    block, params = block_and_params
    _, noise = random_inputs(5, batch=4)
    causes = block.apply({"params": params}, noise).reshape(4, UNITS, SIZE)
    mask = block.apply({"params": params}, method=block.parent_mask)
    again = block.apply({"params": params}, causes, noise, mask, method=block.structural_map)
    np.testing.assert_allclose(again, causes, atol=1e-6)  # Z = f(M ⊙ Z, N)


def test_causes_depend_on_no_later_noise(block_and_params):
    block, params = block_and_params
    _, noise = random_inputs(7, batch=1)
    jacobian = jax.jacobian(lambda n: block.apply({"params": params}, n))(noise)
    per_pair = np.abs(np.asarray(jacobian[0].reshape(UNITS, SIZE, UNITS))).sum(axis=1)
    np.testing.assert_array_equal(np.triu(per_pair, k=1), 0.0)  # Z_i free of N_j, j > i
    assert np.all(np.diag(per_pair) > 0)
    assert per_pair[3, 0] > 0  # through unit 1 or 2, though the gate 0 -> 3 is shut


def test_mask_is_a_gumbel_sample_in_training_and_its_mean_field_value_otherwise(
        block_and_params):
    block, params = block_and_params
    support = np.tril(np.ones((UNITS, UNITS)), k=-1) * np.asarray(ALLOWED)
    mean_field = block.apply({"params": params}, method=block.parent_mask)
    np.testing.assert_allclose(mean_field,
                               support * jax.nn.sigmoid(params["mask_logits"]), rtol=1e-6)
    samples = [block.apply({"params": params}, method=block.parent_mask,
                           rngs={"mask": jax.random.key(seed)}) for seed in range(2)]
    for sample in samples:
        np.testing.assert_array_equal(np.asarray(sample)[support == 0], 0.0)
        assert np.all((np.asarray(sample)[support == 1] > 0)
                      & (np.asarray(sample)[support == 1] < 1))
    assert not np.allclose(samples[0], samples[1])


# The authors' VecSCM (GiuliaLanzillotta/CausalAE models/layers.py) as the XAE configs
# set it: Gumbel noise, standard-normal logits, τ annealed, f_i of two hidden layers of
# 10 with Mish on the output too.
AUTHORS = dict(hidden=10, num_hidden_layers=2, output_activation=True,
               temperature_schedule="exponential", mask_noise="gumbel", mask_init="normal")


def test_the_temperature_anneals_as_the_authors_schedule():
    """experiments/utils.py of the authors' code: τ = max(exp(−0.01·step), 0.01)."""
    block = XBlock(num_units=3, **AUTHORS)
    for step in (0, 1, 100, 300, 460):
        assert float(block.temperature_at(step)) == pytest.approx(
            max(np.exp(-0.01 * step), 0.01), rel=1e-6)
    assert float(block.temperature_at(461)) == pytest.approx(0.01)  # the floor from here
    assert float(block.temperature_at(10_000)) == pytest.approx(0.01)
    assert block.temperature_at(None) == 0.01  # evaluation: the schedule's last value
    constant = XBlock(num_units=3, temperature=0.5)
    assert constant.temperature_at(0) == constant.temperature_at(10_000) == 0.5


def test_the_authors_block_draws_gumbel_gates_from_standard_normal_logits():
    block = XBlock(num_units=40, **AUTHORS)
    params = block.init(jax.random.key(0), jnp.zeros((1, 40)))["params"]
    logits = np.asarray(params["mask_logits"])
    assert abs(logits.mean()) < 0.1 and logits.std() == pytest.approx(1.0, abs=0.1)
    assert [params[f"kernel{k}"].shape for k in range(3)] == [(40, 41, 10), (40, 10, 10),
                                                              (40, 10, 1)]
    # One Gumbel(0, 1) draw per gate: the sample is σ((α + g) / τ), and at α = 0, τ = 1,
    # logit(sample) is g itself, whose mean is the Euler–Mascheroni constant (a
    # Logistic draw's is 0).
    zero = {**params, "mask_logits": jnp.zeros((40, 40))}
    sample = np.asarray(block.apply({"params": zero}, 0, method=block.parent_mask,
                                    rngs={"mask": jax.random.key(1)}))
    gates = sample[np.tril(np.ones((40, 40)), k=-1) == 1]
    noise = np.log(gates) - np.log1p(-gates)
    assert noise.mean() == pytest.approx(np.euler_gamma, abs=0.1)
    assert noise.std() == pytest.approx(np.pi / np.sqrt(6), abs=0.1)  # Gumbel's
    # At step 1000 (τ = 0.01) the gates are near-hard.
    late = np.asarray(block.apply({"params": params}, 1000, method=block.parent_mask,
                                  rngs={"mask": jax.random.key(2)}))
    gates = late[np.tril(np.ones((40, 40)), k=-1) == 1]
    assert np.mean((gates < 0.01) | (gates > 0.99)) > 0.95


def test_the_authors_init_draws_each_f_i_over_its_own_fan_in():
    """torch's xavier_normal_ on unit i's Linear(i·size + 1, hidden) (and on the hidden
    layers), its biases U(±1/√fan-in): the authors' per-unit layers, here stacked."""
    block = XBlock(num_units=40, unit_size=2, weight_init="glorot_normal",
                   bias_init="uniform_fan_in", **AUTHORS)
    params = block.init(jax.random.key(0), jnp.zeros((1, 40)))["params"]
    fan_ins = 2 * np.arange(40) + 1
    np.testing.assert_array_equal(block.first_layer_fan_ins(), fan_ins)
    for k, (unit_fan_ins, fan_out) in enumerate([(fan_ins, 10), (np.full(40, 10), 10),
                                                 (np.full(40, 10), 2)]):
        kernel = np.asarray(params[f"kernel{k}"])
        standardised = kernel / np.sqrt(2.0 / (unit_fan_ins + fan_out))[:, None, None]
        assert standardised.std() == pytest.approx(1.0, abs=0.06)
        assert np.abs(standardised).max() > 3.0  # untruncated, as torch's
        bias = np.asarray(params[f"bias{k}"]) * np.sqrt(unit_fan_ins)[:, None]
        assert np.abs(bias).max() <= 1.0 and np.abs(bias).max() > 0.95
        assert np.mean(bias ** 2) == pytest.approx(1 / 3, abs=0.05)  # uniform's
    # A restricted graph counts only the parents a unit may have.
    restricted = XBlock(num_units=UNITS, unit_size=SIZE, allowed_parents=ALLOWED)
    np.testing.assert_array_equal(restricted.first_layer_fan_ins(),
                                  SIZE * np.asarray(ALLOWED).sum(axis=1) + 1)


def test_the_output_activation_is_mish_of_the_last_layer():
    with_mish = XBlock(num_units=2, **AUTHORS)
    params = with_mish.init(jax.random.key(0), jnp.zeros((1, 2)))["params"]
    without = with_mish.clone(output_activation=False)
    noise = jnp.array([[0.3, -1.2], [2.0, 0.1]])
    np.testing.assert_allclose(with_mish.apply({"params": params}, noise)[:, 0],
                               jax.nn.mish(without.apply({"params": params}, noise))[:, 0],
                               rtol=1e-5)  # unit 0 has no parents: the same input


@pytest.mark.parametrize("fields, message", [
    ({"num_units": 2, "temperature_schedule": "linear"},
     r"vae.model.xblock.temperature_schedule must be one of \('constant', 'exponential'\), "
     r"got 'linear'"),
    ({"num_units": 2, "mask_noise": "normal"}, "vae.model.xblock.mask_noise must be one of"),
    ({"num_units": 2, "mask_init": "ones"}, "vae.model.xblock.mask_init must be one of"),
    ({"num_units": 2, "weight_init": "he_normal"}, "vae.model.xblock.weight_init must be one of"),
    ({"num_units": 2, "bias_init": "ones"}, "vae.model.xblock.bias_init must be one of"),
    ({"num_units": 2, "min_temperature": 0.0}, "vae.model.xblock.min_temperature must be > 0"),
    ({"num_units": 3, "allowed_parents": ((0, 0), (1, 0))},
     "allowed_parents is a 2x2 mask but the block has 3 units"),
    ({"num_units": 2, "allowed_parents": ((0, 1), (1, 0))},
     r"allowed_parents\[0\]\[1\] is 1: .*only below the diagonal"),
    ({"num_units": 2, "unit_size": 0}, "vae.model.xblock.unit_size must be positive"),
    ({"num_units": 2, "temperature": 0.0}, "vae.model.xblock.temperature must be > 0"),
    ({"num_units": 0}, "at least one unit"),
])
def test_bad_fields_are_refused_at_construction(fields, message):
    with pytest.raises(ValueError, match=message):
        XBlock(**fields)


def xvae_section(num_latents=3, allowed_parents=None):
    return ml_collections.ConfigDict({
        "num_latents": num_latents, "encoder_widths": [4, 4], "encoder_hidden": 8,
        "decoder_widths": [4, 4], "decoder_hidden": 8, "likelihood": "bernoulli",
        "xblock": {"unit_size": 2, "hidden": 4, "num_hidden_layers": 1, "temperature": 1.0,
                   "allowed_parents": allowed_parents}})


def test_a_vae_with_an_xblock_decodes_its_causal_units():
    # Lists, as a config read back from JSON holds them.
    model = models.build_vae(xvae_section(allowed_parents=[[0, 0, 0], [1, 0, 0], [0, 1, 0]]),
                             (16, 16, 1))
    assert model.xblock.allowed_parents == ((0, 0, 0), (1, 0, 0), (0, 1, 0))
    images = jnp.zeros((2, 16, 16, 1))
    params = model.init(jax.random.key(0), images)["params"]
    assert set(params) == {"encoder", "decoder", "xblock"}
    latents = jax.random.normal(jax.random.key(1), (2, 3))
    causes = model.apply({"params": params}, latents, method=model.causes)
    assert causes.shape == (2, 6)  # 3 units of 2 dimensions
    direct = model.apply({"params": params}, causes, method=lambda m, z: m.decoder(z))
    np.testing.assert_allclose(model.apply({"params": params}, latents, method=model.decode),
                               direct, rtol=1e-6)


def test_an_xblock_over_other_units_than_the_latents_is_refused():
    with pytest.raises(ValueError, match="the XBlock has 4 units but the model 3 latents"):
        VAE(num_latents=3, encoder_widths=(4,), encoder_hidden=4, decoder_widths=(4,),
            decoder_hidden=4, image_shape=(8, 8, 1), xblock=XBlock(num_units=4))
