"""The iVAE's networks (models/ivae.py): the image model is the VAE's encoder and
decoder plus a prior network on u, built through runs/vae from the config (and
refused without an auxiliary variable); the prior's MLP by hand; the vector model's
encoder sees u and its plain-VAE flag removes u and the prior network; config checks
that name the field."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from causal_disent import models
from causal_disent.data import registry
from causal_disent.models.ivae import IVAE, NEGATIVE_SLOPE, VectorIVAE, xtanh
from causal_disent.runs import vae as vae_run
from configs import ivae_dsprites_synth

IMAGE_SHAPE = (64, 64, 1)


def build(variant="tiny", auxiliary_size=3, **fields):
    """What runs/vae.build_ivae builds from the section."""
    model_config = ivae_dsprites_synth.get_config(variant).vae.model
    model_config.update(fields)
    return IVAE(**models.module_fields(model_config), image_shape=IMAGE_SHAPE,
                auxiliary_size=auxiliary_size)


@pytest.fixture(scope="module")
def tiny():
    model = build()
    images = jnp.linspace(0, 1, 2 * 64 * 64).reshape(2, *IMAGE_SHAPE)
    return model, images, model.init(jax.random.key(0), images)


def test_init_from_images_alone_creates_the_prior_network(tiny):
    """The iVAE authors' prior (ilkhem/iVAE models/nets.py, cleanIVAE: prior_mean a
    fixed zero, logl = MLP(aux_dim, latent_dim, hidden_dim, n_layers=3)): three linear
    layers to log λ(u) alone."""
    model, images, variables = tiny
    params = variables["params"]
    assert set(params) == {"encoder", "decoder", "conditional_prior"}
    kernels = jax.tree.map(jnp.shape, params["conditional_prior"]["log_variance"])
    assert kernels["hidden0"]["kernel"] == (3, 8)  # u one-hot over 3 shapes, prior_hidden 8
    assert kernels["hidden1"]["kernel"] == (8, 8)
    assert kernels["output"]["kernel"] == (8, 3)  # log λ(u) of d = 3 latents, no mean


def test_the_authors_prior_has_mean_zero_and_its_log_variance_by_hand(tiny):
    model, images, variables = tiny
    u = np.eye(3, dtype=np.float32)[[2, 0]]
    mean, log_variance = model.apply(variables, u, method=model.prior)
    np.testing.assert_array_equal(mean, np.zeros((2, 3)))
    mlp = jax.tree.map(np.asarray, variables["params"]["conditional_prior"]["log_variance"])
    hidden = u
    for layer in ("hidden0", "hidden1"):
        hidden = hidden @ mlp[layer]["kernel"] + mlp[layer]["bias"]
        hidden = np.where(hidden >= 0, hidden, NEGATIVE_SLOPE * hidden)
    out = hidden @ mlp["output"]["kernel"] + mlp["output"]["bias"]
    np.testing.assert_allclose(log_variance, out, rtol=1e-5, atol=1e-6)


def test_encoder_and_decoder_are_the_vaes(tiny):
    model, images, variables = tiny
    section = ivae_dsprites_synth.get_config("tiny").vae.model
    for name in ("prior_hidden", "prior_mean", "prior_hidden_layers"):
        del section[name]
    vae = models.build_vae(section, IMAGE_SHAPE)
    vae_variables = {"params": {name: variables["params"][name]
                                for name in ("encoder", "decoder")}}
    ours, theirs = model.apply(variables, images), vae.apply(vae_variables, images)
    assert set(ours) == {"mean", "log_variance", "logits", "reconstruction"}
    jax.tree.map(np.testing.assert_array_equal, ours, theirs)


def test_the_learned_mean_prior_is_the_mlp_on_u_by_hand():
    model = build(prior_mean="learned", prior_hidden_layers=1)
    images = jnp.linspace(0, 1, 2 * 64 * 64).reshape(2, *IMAGE_SHAPE)
    variables = model.init(jax.random.key(0), images)
    u = np.eye(3, dtype=np.float32)[[2, 0]]
    mean, log_variance = model.apply(variables, u, method=model.prior)
    mlp = jax.tree.map(np.asarray, variables["params"]["conditional_prior"])
    hidden = u @ mlp["hidden"]["kernel"] + mlp["hidden"]["bias"]
    hidden = np.where(hidden >= 0, hidden, NEGATIVE_SLOPE * hidden)
    out = hidden @ mlp["to_latent"]["kernel"] + mlp["to_latent"]["bias"]
    np.testing.assert_allclose(mean, out[:, :3], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(log_variance, out[:, 3:], rtol=1e-5, atol=1e-6)
    outputs = model.apply(variables, images, u)
    np.testing.assert_array_equal(outputs["prior_mean"], mean)
    np.testing.assert_array_equal(outputs["prior_log_variance"], log_variance)
    with pytest.raises(ValueError, match=r"u must be \[B, 3\] \(one-hot\); got shape \(2, 4\)"):
        model.apply(variables, np.zeros((2, 4), np.float32), method=model.prior)


@pytest.mark.parametrize("fields, auxiliary_size, message", [
    (dict(prior_hidden=0), 3, "vae.model.prior_hidden must be positive, got 0"),
    (dict(prior_mean="fixed"), 3, r"vae.model.prior_mean must be one of \('zero', 'learned'\)"),
    (dict(prior_hidden_layers=0), 3, "vae.model.prior_hidden_layers must be positive"),
    (dict(prior_mean="learned"), 3, "prior_hidden_layers must be 1 with prior_mean 'learned'"),
    (dict(num_latents=0), 3, "vae.model.num_latents must be positive, got 0"),
    (dict(encoder_widths=()), 3, "vae.model.encoder_widths must name at least one"),
    (dict(), 0, r"the auxiliary variable u \(vae.auxiliary.factor\) needs at least one value"),
])
def test_config_checks_name_the_field(fields, auxiliary_size, message):
    with pytest.raises(ValueError, match=message):
        build(auxiliary_size=auxiliary_size, **fields)


def test_run_builds_the_ivae_with_u_from_the_configured_factor():
    config = ivae_dsprites_synth.get_config("tiny")
    dataset = registry.dataset_from_config(config.data)
    model = vae_run.build_model(config, dataset)
    assert isinstance(model, IVAE) and model.auxiliary_size == 3  # dSprites' 3 shapes
    config.vae.auxiliary.factor = "orientation"
    assert vae_run.build_model(config, dataset).auxiliary_size == 40
    del config.vae["auxiliary"]
    with pytest.raises(ValueError, match=r"^vae.auxiliary.factor is missing: the 'ivae' loss "
                                         r"conditions its prior on an observed auxiliary"):
        vae_run.build_model(config, dataset)


# --- the vector model ------------------------------------------------------------

def vector_model(conditional, **fields):
    sizes = dict(data_dim=4, num_latents=2, auxiliary_size=3, hidden=6, num_hidden_layers=2,
                 decoder_variance=0.1, conditional=conditional)
    return VectorIVAE(**{**sizes, **fields})


X = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
U = np.eye(3, dtype=np.float32)[[0, 2]]


@pytest.mark.parametrize("conditional", [True, False])
def test_vector_model_shapes_and_where_u_enters(conditional):
    model = vector_model(conditional)
    variables = model.init(jax.random.key(1), X, U)
    kernels = jax.tree.map(jnp.shape, variables["params"])
    # The encoder reads [x, u] (iVAE) or x (the plain VAE); only the iVAE has a prior network.
    assert kernels["encoder"]["hidden0"]["kernel"] == ((4 + 3, 6) if conditional else (4, 6))
    assert kernels["encoder"]["output"]["kernel"] == (6, 2 * 2)
    assert kernels["decoder"]["output"]["kernel"] == (6, 4)
    assert ("conditional_prior" in kernels) == conditional
    outputs = model.apply(variables, X, U)
    assert {key: value.shape for key, value in outputs.items()} == {
        "mean": (2, 2), "log_variance": (2, 2), "prior_mean": (2, 2),
        "prior_log_variance": (2, 2), "reconstruction": (2, 4)}
    other_u = model.apply(variables, X, U[::-1])
    for key in ("mean", "prior_log_variance"):
        changed = not np.allclose(outputs[key], other_u[key])
        assert changed == conditional, key
    # The authors' prior N(0, diag λ(u)) by default; the VAE's N(0, I).
    np.testing.assert_array_equal(outputs["prior_mean"], 0.0)
    if not conditional:
        np.testing.assert_array_equal(outputs["prior_log_variance"], 0.0)


def test_vector_model_prior_is_the_authors_three_layer_network_or_the_earlier_one():
    """ilkhem/iVAE models/nets.py `cleanIVAE`: prior_mean zeros, logl = MLP(n_layers=3),
    three linear layers; the earlier prior learns μ(u) beside log λ(u) from one hidden
    layer, and its mean moves with u."""
    authors = vector_model(True).init(jax.random.key(1), X, U)["params"]["conditional_prior"]
    assert sorted(authors["log_variance"]) == ["hidden0", "hidden1", "output"]
    earlier = vector_model(True, prior_mean="learned", prior_hidden_layers=1)
    variables = earlier.init(jax.random.key(1), X, U)
    means = [earlier.apply(variables, X, u)["prior_mean"] for u in (U, U[::-1])]
    assert not np.allclose(*means)


def test_vector_model_as_the_authors_clean_ivae():
    """ilkhem/iVAE `cleanIVAE`: g and logv two MLPs on [x, u], xtanh (tanh(x) + 0.1·x)
    after each hidden layer, PyTorch's nn.Linear initialisation (weights and biases
    U(±1/√fan-in))."""
    model = vector_model(True, activation="xtanh", encoder_heads="separate",
                         dense_init="torch", hidden=400)
    variables = model.init(jax.random.key(1), X, U)
    params = variables["params"]
    assert "encoder" not in params
    for head in ("encoder_mean", "encoder_log_variance"):
        assert params[head]["hidden0"]["kernel"].shape == (4 + 3, 400)
        assert params[head]["output"]["kernel"].shape == (400, 2)
    for layer, fan_in in (("hidden0", 4 + 3), ("hidden1", 400)):
        for name in ("kernel", "bias"):
            scaled = np.asarray(params["decoder"][layer][name]) * np.sqrt(
                2 if layer == "hidden0" else fan_in)  # the decoder's first fan-in: d = 2
            assert np.abs(scaled).max() <= 1.0 and np.abs(scaled).max() > 0.9, (layer, name)
    # The encoder's mean is the g MLP of the input, its nonlinearity xtanh.
    inputs = np.concatenate([X, U], axis=-1)
    hidden = inputs
    g = params["encoder_mean"]
    for layer in ("hidden0", "hidden1"):
        hidden = hidden @ g[layer]["kernel"] + g[layer]["bias"]
        hidden = np.tanh(hidden) + 0.1 * hidden
    np.testing.assert_allclose(model.apply(variables, X, U)["mean"],
                               hidden @ g["output"]["kernel"] + g["output"]["bias"],
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(xtanh(jnp.array([-2.0, 0.5])),
                               [np.tanh(-2.0) - 0.2, np.tanh(0.5) + 0.05], rtol=1e-6)


@pytest.mark.parametrize("fields, message", [
    (dict(activation="relu"), r"activation must be one of \('leaky_relu', 'xtanh'\)"),
    (dict(dense_init="glorot"), "dense_init must be one of"),
    (dict(encoder_heads="two"), "encoder_heads must be one of"),
    (dict(prior_mean="learned", prior_hidden_layers=1, activation="xtanh"),
     "prior_mean 'learned' has a leaky-ReLU head"),
    (dict(data_dim=0), "data_dim must be positive, got 0"),
    (dict(hidden=0), "hidden must be positive, got 0"),
    (dict(num_hidden_layers=-1), "num_hidden_layers must be >= 0, got -1"),
    (dict(decoder_variance=0.0), "decoder_variance must be > 0, got 0.0"),
    (dict(prior_mean="fixed"), r"prior_mean must be one of \('zero', 'learned'\)"),
    (dict(prior_mean="learned"), "prior_hidden_layers must be 1 with prior_mean 'learned'"),
])
def test_vector_model_checks_name_the_field(fields, message):
    with pytest.raises(ValueError, match=message):
        vector_model(True, **fields)


def test_vector_model_refuses_wrong_shapes():
    model = vector_model(True)
    variables = model.init(jax.random.key(1), X, U)
    with pytest.raises(ValueError, match=r"x must be \[B, 4\]"):
        model.apply(variables, X[:, :3], U, method=model.encode)
    with pytest.raises(ValueError, match=r"u must be \[B, 3\]"):
        model.apply(variables, X, U[:, :2], method=model.encode)
