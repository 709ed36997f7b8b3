"""The Ladder VAE (Sønderby et al., "Ladder Variational Autoencoders", NeurIPS 2016): a
VAE with L stochastic layers z_1 (bottom) ... z_L (top) whose inference network
runs the generative model's own top-down path (ibid. §2.2).

Generative model (top-down):
    p(z_L) = N(0, I),  p(z_l | z_{l+1}) = N(μ_p,l, σ²_p,l) by an MLP of z_{l+1},
    p(x | z_1) = the pixels' `likelihood` around σ(decoder(z_1))  (models/vae.py's
                 ImageDecoder; Bernoulli unless the config says "gaussian")
Inference:
    bottom-up  d_1 = the study's convolutional encoder on x (models/vae.py's
               `encode_to_vector`), d_l = an MLP of d_{l-1}; each d_l gives an
               approximate likelihood N(μ̂_l, σ̂²_l)
    top-down   q(z_L | x) = N(μ̂_L, σ̂²_L); below it q(z_l | ·) is N(μ̂_l, σ̂²_l)
               merged with the prior p(z_l | z_{l+1}) at the sampled z_{l+1} by
               `precision_weighted`

`ladder_pass` runs this with given noise ε (z_l = μ_q,l + σ_q,l·ε_l); the loss
(objectives/ladder_vae.py) draws ε, and the family's interface (models/vae.VAE's)
passes ε = 0, the deterministic pass that feeds each layer's posterior mean down:

    encode    the posterior (mean, log-variance) of every layer, concatenated bottom
              layer first: [B, Σ_l n_l], the representation the metric card scores
    decode    the pixels' logits from the bottom latent z_1 only (the first n_1
              columns): x depends on the upper layers only through z_1
    __call__  encode, then decode the posterior means

No batch normalisation (which the paper uses, ibid. §2.3): the family's train state
holds parameters only, and with KL warm-up alone the upper layer stays in use at the
sizes of configs/laddervae_dsprites_synth.py (its docstring records the per-layer KL).
Variances are carried as log-variances, as in models/vae.py.
"""

from collections.abc import Callable, Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from causal_disent.models.vae import (
    KERNEL_INITS,
    GaussianHead,
    ImageDecoder,
    check_vae_config,
    encode_to_vector,
)


def check_ladder_vae_config(model_config, image_shape) -> None:
    """Raises ValueError naming the first field of `model_config` (a LadderVAE: the
    section `vae.model`'s fields and `num_latents`) that cannot build a model for images
    of `image_shape` (H, W, ch): the layers' sizes, then models/vae.py's checks of the
    conv fields."""
    sizes = tuple(model_config.latent_sizes)
    if not sizes or min(sizes) < 1:
        raise ValueError("vae.model.latent_sizes must name at least one layer's size "
                         f"(bottom layer first), all positive; got {sizes}")
    hidden = tuple(model_config.ladder_hidden)
    if len(hidden) != len(sizes):
        raise ValueError(f"vae.model.ladder_hidden names {len(hidden)} widths but "
                         f"vae.model.latent_sizes {len(sizes)} layers: give one width per "
                         "layer")
    if min(hidden) < 1:
        raise ValueError(f"vae.model.ladder_hidden must be positive, got {hidden}")
    check_vae_config(model_config, image_shape)


def precision_weighted(likelihood_mean: jax.Array, likelihood_log_variance: jax.Array,
                       prior_mean: jax.Array, prior_log_variance: jax.Array
                       ) -> tuple[jax.Array, jax.Array]:
    """The product of two Gaussians N(μ̂, σ̂²)·N(μ_p, σ²_p), normalised (ibid. §2.2):
    precision σ_q⁻² = σ̂⁻² + σ_p⁻², mean μ_q = (μ̂·σ̂⁻² + μ_p·σ_p⁻²)·σ²_q.
    Elementwise on log-variances, broadcasting; returns (μ_q, log σ²_q).

    Written as σ²-weights of the two means, σ_p²/(σ̂² + σ_p²) = sigmoid(log σ_p² −
    log σ̂²), so that no precision is formed (it overflows for a small variance)."""
    log_variance = -jnp.logaddexp(-likelihood_log_variance, -prior_log_variance)
    likelihood_weight = jax.nn.sigmoid(prior_log_variance - likelihood_log_variance)
    mean = likelihood_weight * likelihood_mean + (1.0 - likelihood_weight) * prior_mean
    return mean, log_variance


class BottomUpLadder(nn.Module):
    """Images [B, H, W, ch] -> the approximate likelihoods (μ̂_l, log σ̂²_l) [B, n_l]
    of every layer, bottom layer first: d_1 = ReLU(`encode_to_vector` to
    hidden_widths[0]), d_l = ReLU(dense(d_{l-1})) of hidden_widths[l], each d_l
    followed by a dense layer to 2·n_l."""

    encoder_widths: Sequence[int]
    encoder_hidden: int
    hidden_widths: Sequence[int]
    latent_sizes: Sequence[int]
    kernel_sizes: Sequence[int] | None = None
    kernel_init: Callable = nn.linear.default_kernel_init

    @nn.compact
    def __call__(self, images: jax.Array) -> list[tuple[jax.Array, jax.Array]]:
        deterministic = nn.relu(encode_to_vector(
            images, self.encoder_widths, self.encoder_hidden, self.hidden_widths[0],
            nn.relu, self.kernel_sizes, self.kernel_init))
        likelihoods = []
        for layer, (width, size) in enumerate(zip(self.hidden_widths, self.latent_sizes)):
            if layer > 0:
                deterministic = nn.relu(nn.Dense(width, kernel_init=self.kernel_init,
                                                 name=f"step{layer}")(deterministic))
            estimate = nn.Dense(2 * size, kernel_init=self.kernel_init,
                                name=f"likelihood{layer}")(deterministic)
            likelihoods.append(tuple(jnp.split(estimate, 2, axis=-1)))
        return likelihoods


class LadderVAE(nn.Module):
    """The Ladder VAE with the VAE family's interface (models/vae.VAE's).

    Every field but `image_shape` (the images') is a key of the config section
    `vae.model`: the conv encoder and decoder as VAE's, `latent_sizes` (n_1, ..., n_L,
    bottom layer first) and `ladder_hidden` (one width per layer: of its bottom-up step
    d_l and of the MLP of its prior p(z_l | z_{l+1})). `check_ladder_vae_config`
    checks them when the module is constructed.
    """

    latent_sizes: Sequence[int]
    ladder_hidden: Sequence[int]
    encoder_widths: Sequence[int]
    encoder_hidden: int
    decoder_widths: Sequence[int]
    decoder_hidden: int
    image_shape: tuple[int, int, int]
    likelihood: str = "bernoulli"  # models/vae.LIKELIHOODS
    # As models/vae.VAE's: None / "lecun_normal" are a config written before them.
    encoder_kernel_sizes: Sequence[int] | None = None
    weight_init: str = "lecun_normal"  # a key of models/vae.KERNEL_INITS

    def __post_init__(self):
        check_ladder_vae_config(self, self.image_shape)
        super().__post_init__()

    @property
    def num_latents(self) -> int:
        """Σ_l n_l, the width of `encode`'s concatenated posterior."""
        return int(sum(self.latent_sizes))

    def setup(self):
        kernel_init = KERNEL_INITS[self.weight_init]
        self.bottom_up = BottomUpLadder(self.encoder_widths, self.encoder_hidden,
                                        self.ladder_hidden, self.latent_sizes,
                                        self.encoder_kernel_sizes, kernel_init)
        # priors[l] is p(z_l | z_{l+1}) for l < L − 1; the top layer's prior is N(0, I).
        self.priors = [GaussianHead(width, size, kernel_init=kernel_init)
                       for width, size in zip(self.ladder_hidden[:-1], self.latent_sizes[:-1])]
        self.decoder = ImageDecoder(self.decoder_widths, self.decoder_hidden,
                                    tuple(self.image_shape), kernel_init)

    def ladder_pass(self, images: jax.Array, noise: jax.Array) -> dict[str, jax.Array]:
        """The inference pass with noise ε [B, Σ n_l] (bottom layer first): top-down,
        z_l = μ_q,l + σ_q,l·ε_l, then the logits of p(x | z_1).

        Returns {posterior_mean, posterior_log_variance, prior_mean,
        prior_log_variance, z}, each [B, Σ n_l] bottom layer first (the top layer's
        prior is N(0, I): mean 0, log-variance 0), and logits [B, H, W, ch]."""
        self.check_images(images)
        noises = jnp.split(noise, np.cumsum(self.latent_sizes)[:-1], axis=-1)
        likelihoods = self.bottom_up(images)
        mean, log_variance = likelihoods[-1]
        prior = (jnp.zeros_like(mean), jnp.zeros_like(log_variance))  # the top's N(0, I)
        layers = []  # (posterior mean, log-variance, prior mean, log-variance, z), top first
        for layer in reversed(range(len(self.latent_sizes))):
            if layers:  # below the top: p(z_l | z_{l+1}) at the sample above
                prior = self.priors[layer](layers[-1][-1])
                mean, log_variance = precision_weighted(*likelihoods[layer], *prior)
            latents = mean + jnp.exp(0.5 * log_variance) * noises[layer]
            layers.append((mean, log_variance, *prior, latents))
        names = ("posterior_mean", "posterior_log_variance", "prior_mean",
                 "prior_log_variance", "z")
        outputs = {name: jnp.concatenate(parts[::-1], axis=-1)
                   for name, parts in zip(names, zip(*layers))}
        return {**outputs, "logits": self.decoder(latents)}  # latents = z_1

    def check_images(self, images: jax.Array) -> None:
        """ValueError unless `images` are [B, H, W, ch] of the model's image shape."""
        if images.ndim != 4 or tuple(images.shape[1:]) != tuple(self.image_shape):
            raise ValueError(f"images must be [B, {', '.join(map(str, self.image_shape))}] "
                             f"floats in [0, 1]; got shape {images.shape}")

    def encode(self, images: jax.Array) -> tuple[jax.Array, jax.Array]:
        """Images [B, H, W, ch] in [0, 1] -> (mean, log-variance) of every layer's
        posterior in the deterministic pass (ε = 0), each [B, Σ n_l] bottom first."""
        outputs = self.ladder_pass(images, jnp.zeros((images.shape[0], self.num_latents)))
        return outputs["posterior_mean"], outputs["posterior_log_variance"]

    def decode(self, latents: jax.Array, step: jax.Array | None = None) -> jax.Array:
        """Latents [B, Σ n_l] (bottom layer first) -> logits [B, H, W, ch] of
        p(x | z_1)'s pixel means: only the bottom layer's n_1 columns are read. `step`
        is VAE.decode's (for an XBlock's schedule); the LadderVAE has no XBlock."""
        del step
        if latents.ndim != 2 or latents.shape[-1] != self.num_latents:
            raise ValueError(f"latents must be [B, {self.num_latents}]; got shape "
                             f"{latents.shape}")
        return self.decoder(latents[:, :self.latent_sizes[0]])

    def __call__(self, images: jax.Array) -> dict[str, jax.Array]:
        """The deterministic pass, for evaluation and figures: {mean, log_variance
        [B, Σ n_l], logits, reconstruction = σ(logits) [B, H, W, ch]}, the logits
        decoded from the bottom layer's posterior mean."""
        mean, log_variance = self.encode(images)
        logits = self.decode(mean)
        return {"mean": mean, "log_variance": log_variance, "logits": logits,
                "reconstruction": jax.nn.sigmoid(logits)}
