"""iVAE (Khemakhem, Kingma, Monti & Hyvärinen, "Variational Autoencoders and
Nonlinear ICA: A Unifying Framework", AISTATS 2020, §3): a VAE whose prior is
conditioned on an observed auxiliary variable u (a segment, a class),

    p(z | u) = N(μ(u), diag λ(u)),  μ and log λ by an MLP on u,

or, as the iVAE authors' code has it (ilkhem/iVAE, models/nets.py: `prior_mean` a
fixed zero, `logl` an MLP of three linear layers), N(0, diag λ(u)) with only log λ
learned: `PRIOR_MEANS`. Both networks below take either (`prior_mean`,
`prior_hidden_layers`): the image IVAE's configs and the vector model's default the
authors'.

The prior makes the latents identifiable up to permutation and componentwise
transformations when u modulates their distributions enough (ibid. Theorem 1 and
its conditions). Two networks (`prior_network`):

  IVAE        images, for the VAE family's `vae` stage: the convolutional VAE of
              models/vae.py with q(z | x) of the image alone, where the paper's
              encoder is q(z | x, u) (§3). The metric card scores the encoder mean
              of images alone (evaluation/representations.vae_representations), so
              the encoder must not need u; u enters through the prior only, whose
              KL term ties the latents to u.
  VectorIVAE  vectors, for the paper's synthetic nonlinear ICA
              (data/nonlinear_ica.py): MLPs with the paper's encoder q(z | x, u) and
              a Gaussian decoder p(x | z) of fixed variance. `conditional=False` is
              the plain VAE baseline on the same network: encoder q(z | x), prior
              N(0, I).

The losses are objectives/ivae.py's.
"""

import dataclasses

import flax.linen as nn
import jax
import jax.numpy as jnp

from causal_disent.models.vae import VAE, GaussianHead

NEGATIVE_SLOPE = 0.1  # of the leaky ReLU in the MLPs, and the linear term of xtanh


def leaky_relu(x: jax.Array) -> jax.Array:
    return nn.leaky_relu(x, negative_slope=NEGATIVE_SLOPE)


def xtanh(x: jax.Array) -> jax.Array:
    """tanh(x) + 0.1·x, the iVAE authors' default nonlinearity (models/nets.py)."""
    return jnp.tanh(x) + NEGATIVE_SLOPE * x


# The MLPs' nonlinearity (VectorIVAE's `activation`).
ACTIVATIONS = {"leaky_relu": leaky_relu, "xtanh": xtanh}
# Dense layers' initialisation (`dense_init`): Flax's (LeCun-normal kernels, zero
# biases), or PyTorch's nn.Linear default, which the authors' code keeps: kernels and
# biases uniform in ±1/√fan-in.
DENSE_INITS = ("flax", "torch")
# q(z | x, u)'s mean and log-variance (`encoder_heads`): the two halves of one MLP's
# output ("shared"), or two MLPs, as the authors' `g` and `logv` ("separate").
ENCODER_HEADS = ("shared", "separate")


def _torch_bias_init(fan_in: int):
    def init(key, shape, dtype=jnp.float32):
        bound = 1.0 / jnp.sqrt(jnp.asarray(fan_in, dtype))
        return jax.random.uniform(key, shape, dtype, -bound, bound)
    return init


class MLP(nn.Module):
    """[B, in] -> [B, out]: `num_hidden_layers` dense layers of `hidden` units, each
    followed by `activation` (a key of `ACTIVATIONS`), then a dense output layer,
    initialised as `dense_init` says."""

    hidden: int
    num_hidden_layers: int
    out: int
    activation: str = "leaky_relu"
    dense_init: str = "flax"

    def _dense(self, features: int, fan_in: int, name: str) -> nn.Dense:
        if self.dense_init == "flax":
            return nn.Dense(features, name=name)
        return nn.Dense(features, name=name,
                        kernel_init=nn.initializers.variance_scaling(1 / 3, "fan_in", "uniform"),
                        bias_init=_torch_bias_init(fan_in))

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        activation = ACTIVATIONS[self.activation]
        for layer in range(self.num_hidden_layers):
            x = activation(self._dense(self.hidden, x.shape[-1], f"hidden{layer}")(x))
        return self._dense(self.out, x.shape[-1], "output")(x)


def conditional_gaussian_prior(hidden: int, num_latents: int) -> GaussianHead:
    """p(z | u): u [B, n] -> (mean μ(u), log-variance log λ(u)), each [B, d], by an
    MLP with one leaky-ReLU hidden layer of `hidden` units."""
    return GaussianHead(hidden, num_latents, activation=leaky_relu)


# p(z | u)'s mean: "zero" (the authors' code: only the variance depends on u) or
# "learned" μ(u) beside log λ(u) (this project's first reading of the paper's §3).
PRIOR_MEANS = ("zero", "learned")


def check_prior_fields(prior_mean: str, prior_hidden_layers: int, section: str) -> None:
    """ValueError naming `section`'s field unless the prior's mean is one of
    `PRIOR_MEANS` and its hidden layers fit it."""
    if prior_mean not in PRIOR_MEANS:
        raise ValueError(f"{section}prior_mean must be one of {PRIOR_MEANS}, got "
                         f"{prior_mean!r}")
    if prior_hidden_layers < 1:
        raise ValueError(f"{section}prior_hidden_layers must be positive, got "
                         f"{prior_hidden_layers}")
    if prior_mean == "learned" and prior_hidden_layers != 1:
        raise ValueError(f"{section}prior_hidden_layers must be 1 with prior_mean "
                         "'learned' (its μ(u), log λ(u) head has one hidden layer)")


def prior_network(prior_mean: str, hidden: int, hidden_layers: int, num_latents: int,
                  activation: str = "leaky_relu", dense_init: str = "flax") -> nn.Module:
    """p(z | u) of `prior_mean`: `ZeroMeanPrior` (its MLP of `activation` and
    `dense_init`) or `conditional_gaussian_prior` (leaky ReLU, Flax's initialisation)."""
    if prior_mean == "zero":
        return ZeroMeanPrior(hidden, hidden_layers, num_latents, activation, dense_init)
    return conditional_gaussian_prior(hidden, num_latents)


class ZeroMeanPrior(nn.Module):
    """p(z | u) = N(0, diag λ(u)): u [B, n] -> (zeros, log λ(u)), each [B, d], log λ
    by an `MLP` of `num_hidden_layers` layers of `hidden` units."""

    hidden: int
    num_hidden_layers: int
    num_latents: int
    activation: str = "leaky_relu"
    dense_init: str = "flax"

    @nn.compact
    def __call__(self, auxiliary: jax.Array) -> tuple[jax.Array, jax.Array]:
        log_variance = MLP(self.hidden, self.num_hidden_layers, self.num_latents,
                           self.activation, self.dense_init, name="log_variance")(auxiliary)
        return jnp.zeros_like(log_variance), log_variance


def check_auxiliary(auxiliary: jax.Array, auxiliary_size: int) -> None:
    """ValueError unless `auxiliary` is [B, auxiliary_size]."""
    if auxiliary.ndim != 2 or auxiliary.shape[-1] != auxiliary_size:
        raise ValueError(f"the auxiliary variable u must be [B, {auxiliary_size}] (one-hot); "
                         f"got shape {auxiliary.shape}")


class IVAE(VAE):
    """models/vae.VAE (encoder q(z | x), decoder of the pixels' `likelihood`) with the prior p(z | u) of
    `conditional_gaussian_prior` in place of N(0, I).

    Every field but `image_shape` and `auxiliary_size` (the size n of the one-hot u,
    from `vae.auxiliary.factor`: runs/vae.auxiliary_size) is a key of the config
    section `vae.model`; they are checked when the module is constructed.
    """

    prior_hidden: int
    auxiliary_size: int
    # What a config written before these fields meant: μ(u) learned, one hidden layer.
    prior_mean: str = dataclasses.field(default="learned", kw_only=True)
    prior_hidden_layers: int = dataclasses.field(default=1, kw_only=True)

    def __post_init__(self):
        if self.prior_hidden < 1:
            raise ValueError(f"vae.model.prior_hidden must be positive, got {self.prior_hidden}")
        check_prior_fields(self.prior_mean, self.prior_hidden_layers, "vae.model.")
        if self.auxiliary_size < 1:
            raise ValueError(f"the auxiliary variable u (vae.auxiliary.factor) needs at least "
                             f"one value, got {self.auxiliary_size}")
        super().__post_init__()  # VAE's: checks the other fields

    def setup(self):
        super().setup()
        self.conditional_prior = prior_network(self.prior_mean, self.prior_hidden,
                                               self.prior_hidden_layers, self.num_latents)

    def prior(self, auxiliary: jax.Array) -> tuple[jax.Array, jax.Array]:
        """u [B, n] -> (mean, log-variance) of p(z | u), each [B, d]."""
        check_auxiliary(auxiliary, self.auxiliary_size)
        return self.conditional_prior(auxiliary)

    def __call__(self, images: jax.Array,
                 auxiliary: jax.Array | None = None) -> dict[str, jax.Array]:
        """VAE's deterministic pass {mean, log_variance, logits, reconstruction}, with
        prior_mean and prior_log_variance [B, d] of p(z | u) when u [B, n] is given
        (evaluation encodes images alone)."""
        outputs = super().__call__(images)
        if auxiliary is None and self.is_initializing():
            # `init` sees images only (runs/vae.create_state): the prior's parameters
            # are created on a placeholder u of the right shape.
            self.prior(jnp.zeros((images.shape[0], self.auxiliary_size), images.dtype))
        if auxiliary is not None:
            outputs["prior_mean"], outputs["prior_log_variance"] = self.prior(auxiliary)
        return outputs


def check_vector_ivae_config(model) -> None:
    """Raises ValueError naming the first field of a VectorIVAE that is invalid."""
    for name in ("data_dim", "num_latents", "auxiliary_size", "hidden"):
        if getattr(model, name) < 1:
            raise ValueError(f"{name} must be positive, got {getattr(model, name)}")
    if model.num_hidden_layers < 0:
        raise ValueError(f"num_hidden_layers must be >= 0, got {model.num_hidden_layers}")
    if not model.decoder_variance > 0:
        raise ValueError(f"decoder_variance must be > 0, got {model.decoder_variance}")
    check_prior_fields(model.prior_mean, model.prior_hidden_layers, "")
    for name, allowed in (("activation", tuple(ACTIVATIONS)), ("dense_init", DENSE_INITS),
                          ("encoder_heads", ENCODER_HEADS)):
        if getattr(model, name) not in allowed:
            raise ValueError(f"{name} must be one of {allowed}, got {getattr(model, name)!r}")
    if model.conditional and model.prior_mean == "learned" and (
            model.activation, model.dense_init) != ("leaky_relu", "flax"):
        raise ValueError("prior_mean 'learned' has a leaky-ReLU head with Flax's "
                         "initialisation: use it with activation 'leaky_relu' and "
                         "dense_init 'flax', or prior_mean 'zero'")


class VectorIVAE(nn.Module):
    """iVAE on vectors x [B, D] with u [B, n] (`conditional`), or the plain VAE on the
    same network (not `conditional`):

      encoder  q(z | x, u) (q(z | x))  an MLP on [x, u] (x) -> mean, log-variance [B, d]
               (`encoder_heads`: one MLP's two halves, or two MLPs)
      decoder  p(x | z) = N(g(z), decoder_variance·I), g an MLP [B, d] -> [B, D]
      prior    p(z | u) of `prior_mean` (`PRIOR_MEANS`) (N(0, I))

    The MLPs have `num_hidden_layers` layers of `hidden` units with `activation`; the
    prior's `prior_hidden_layers` such layers; all initialised as `dense_init`. The
    defaults are this project's network; the authors' `cleanIVAE` is
    num_hidden_layers=2, activation="xtanh", encoder_heads="separate",
    dense_init="torch", decoder_variance=0.1.
    """

    data_dim: int
    num_latents: int
    auxiliary_size: int
    hidden: int
    num_hidden_layers: int
    decoder_variance: float
    conditional: bool
    # The iVAE authors' prior by default (cleanIVAE: N(0, diag λ(u)), log λ by three
    # linear layers); "learned", 1 is this project's first one.
    prior_mean: str = dataclasses.field(default="zero", kw_only=True)
    prior_hidden_layers: int = dataclasses.field(default=2, kw_only=True)
    activation: str = dataclasses.field(default="leaky_relu", kw_only=True)
    encoder_heads: str = dataclasses.field(default="shared", kw_only=True)
    dense_init: str = dataclasses.field(default="flax", kw_only=True)

    def __post_init__(self):
        check_vector_ivae_config(self)
        super().__post_init__()

    def setup(self):
        def mlp(out: int) -> MLP:
            return MLP(self.hidden, self.num_hidden_layers, out, self.activation,
                       self.dense_init)
        if self.encoder_heads == "shared":
            self.encoder = mlp(2 * self.num_latents)
        else:
            self.encoder_mean = mlp(self.num_latents)
            self.encoder_log_variance = mlp(self.num_latents)
        self.decoder = mlp(self.data_dim)
        if self.conditional:
            self.conditional_prior = prior_network(
                self.prior_mean, self.hidden, self.prior_hidden_layers, self.num_latents,
                self.activation, self.dense_init)

    def encode(self, x: jax.Array, auxiliary: jax.Array) -> tuple[jax.Array, jax.Array]:
        """x [B, D], u [B, n] (unused by the plain VAE) -> (mean, log-variance) [B, d]."""
        if x.ndim != 2 or x.shape[-1] != self.data_dim:
            raise ValueError(f"x must be [B, {self.data_dim}]; got shape {x.shape}")
        check_auxiliary(auxiliary, self.auxiliary_size)
        inputs = jnp.concatenate([x, auxiliary], axis=-1) if self.conditional else x
        if self.encoder_heads == "separate":
            return self.encoder_mean(inputs), self.encoder_log_variance(inputs)
        mean, log_variance = jnp.split(self.encoder(inputs), 2, axis=-1)
        return mean, log_variance

    def decode(self, latents: jax.Array) -> jax.Array:
        """Latents [B, d] -> the mean g(z) [B, D] of p(x | z)."""
        return self.decoder(latents)

    def prior(self, auxiliary: jax.Array) -> tuple[jax.Array, jax.Array]:
        """u [B, n] -> (mean, log-variance) [B, d] of p(z | u); zeros (N(0, I)) for the
        plain VAE."""
        check_auxiliary(auxiliary, self.auxiliary_size)
        if not self.conditional:
            zeros = jnp.zeros((auxiliary.shape[0], self.num_latents), auxiliary.dtype)
            return zeros, zeros
        return self.conditional_prior(auxiliary)

    def __call__(self, x: jax.Array, auxiliary: jax.Array) -> dict[str, jax.Array]:
        """The deterministic pass (z = the posterior mean): {mean, log_variance,
        prior_mean, prior_log_variance [B, d], reconstruction g(mean) [B, D]}."""
        mean, log_variance = self.encode(x, auxiliary)
        prior_mean, prior_log_variance = self.prior(auxiliary)
        return {"mean": mean, "log_variance": log_variance, "prior_mean": prior_mean,
                "prior_log_variance": prior_log_variance, "reconstruction": self.decode(mean)}
