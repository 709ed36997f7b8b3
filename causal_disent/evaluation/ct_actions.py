"""A trained CT-VAE loaded from its workdir, its actions applied to images and
inferred from pairs: the public `causal_disent.ct_interventions` (its usage is there)
and the stage's evaluation figures.
"""

import dataclasses
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from causal_disent.data import registry, transitions
from causal_disent.models.ct_layer import CausalTransition
from causal_disent.models.mcqvae import MCQVAE
from causal_disent.objectives import ct as ct_objectives
from causal_disent.runs import ct as ct_run
from causal_disent.runs import mcqvae as mcqvae_run
from causal_disent.runs.config_file import read_config
from causal_disent.utils.images import images_to_unit_range
from causal_disent.utils.sharding import make_data_mesh


@dataclasses.dataclass(frozen=True)
class CTVAE:
    """A frozen MCQ-VAE and a trained CT layer, with what is needed to use them."""

    mcqvae: MCQVAE
    mcqvae_params: dict
    transition: CausalTransition
    transition_params: dict
    image_shape: tuple[int, int, int]
    latent_shape: tuple[int, int, int]  # (C, h, w) of the code grid
    action_names: tuple[str, ...]

    @property
    def num_actions(self) -> int:
        return self.transition.num_actions

    @classmethod
    def load(cls, workdir: str | Path) -> "CTVAE":
        """Restores both stages from a run's workdir (its config.json and checkpoints)."""
        workdir = Path(workdir)
        config = read_config(workdir)
        dataset = registry.dataset_from_config(config.data)
        mesh = make_data_mesh(jax.devices()[:1])
        mcqvae, mcqvae_params = mcqvae_run.load_trained(
            config, ct_run.mcqvae_workdir(config, workdir), mesh, dataset
        )
        transition, transition_params = ct_run.load_trained(
            config, workdir, mesh, dataset, stage1_params=mcqvae_params)
        return cls(
            mcqvae=mcqvae,
            mcqvae_params=jax.device_get(mcqvae_params),
            transition=transition,
            transition_params=jax.device_get(transition_params),
            image_shape=tuple(dataset.image_shape),
            latent_shape=mcqvae.code_grid_shape(dataset.image_shape),
            action_names=tuple(transitions.dataset_action_names(dataset)),
        )

    def encode(self, images: np.ndarray) -> jax.Array:
        """uint8 [B, H, W, ch] -> codes [B, N]."""
        return _encode(self.mcqvae, self.mcqvae_params, jnp.asarray(images))

    def decode(self, codes: jax.Array) -> np.ndarray:
        """codes [B, N] -> uint8 images [B, H, W, ch]."""
        grid = codes.reshape(codes.shape[0], *self.latent_shape)
        images = _decode(self.mcqvae, self.mcqvae_params, grid)
        return np.asarray(jnp.round(jnp.clip(images, 0, 1) * 255)).astype(np.uint8)


def apply_action(
    model: CTVAE, image: np.ndarray, action: int, times: int = 1, seed: int = 0
) -> np.ndarray:
    """Applies `action` to `image` `times` times, feeding each predicted code grid
    back in. Returns uint8 [times + 1, H, W, ch]: the reconstruction of the input,
    then each intervention's decoded output."""
    images = _check_images(model, image)
    if images.shape[0] != 1:
        raise ValueError(f"apply_action takes one image [H, W, ch], got {image.shape}")
    _check_action(model, action)
    if isinstance(times, bool) or not isinstance(times, (int, np.integer)) or times < 1:
        raise ValueError(f"times must be an integer >= 1, got {times!r}")
    codes = model.encode(images)
    chain = [codes]
    for step in range(times):
        codes = _transition_codes(
            model.transition, model.transition_params, codes,
            jnp.full((1,), action, jnp.int32), jax.random.key(seed + step),
        )
        chain.append(codes)
    return model.decode(jnp.concatenate(chain))


def infer_action(model: CTVAE, x: np.ndarray, y: np.ndarray, seed: int = 0) -> np.ndarray:
    """Probabilities q over the A actions that X became Y (paper Eq. 10).

    x, y: uint8 [H, W, ch] or [B, H, W, ch]. Returns [A] or [B, A]."""
    single = np.ndim(x) == 3
    x_images, y_images = _check_images(model, x), _check_images(model, y)
    if x_images.shape != y_images.shape:
        raise ValueError(f"x and y differ in shape: {x_images.shape} vs {y_images.shape}")
    scores = _action_scores(
        model.transition, model.transition_params, model.encode(x_images),
        model.encode(y_images), jax.random.key(seed),
    )
    probs = np.asarray(jax.nn.softmax(scores, axis=-1))
    return probs[0] if single else probs


@jax.jit(static_argnums=0)
def _encode(mcqvae, params, images):
    codes = mcqvae.apply({"params": params}, images_to_unit_range(images), method=mcqvae.encode_codes)
    return codes.reshape(codes.shape[0], -1)


@jax.jit(static_argnums=0)
def _decode(mcqvae, params, code_grid):
    return mcqvae.apply({"params": params}, code_grid, method=mcqvae.decode_codes)


@jax.jit(static_argnums=0)
def _transition_codes(transition, params, codes, action, rng):
    outputs = transition.apply(
        {"params": params}, codes, action, rngs={"gumbel": rng, "noise": rng}
    )
    return jnp.argmax(outputs["logits"], axis=-1).astype(jnp.int32)


@jax.jit(static_argnums=0)
def _action_scores(transition, params, x_codes, y_codes, rng):
    outputs = transition.apply(
        {"params": params}, x_codes, rngs={"gumbel": rng, "noise": rng},
        method=transition.all_actions,
    )
    return ct_objectives.action_scores(outputs["logits"], y_codes)


def _check_images(model: CTVAE, images: np.ndarray) -> np.ndarray:
    images = np.asarray(images)
    if images.dtype != np.uint8:
        raise ValueError(
            f"images must be uint8 in [0, 255] as the dataset renders them, got {images.dtype}"
        )
    if images.ndim == 3:
        images = images[None]
    if images.ndim != 4 or images.shape[1:] != model.image_shape:
        raise ValueError(
            f"images must be [H, W, ch] or [B, H, W, ch] with [H, W, ch] = "
            f"{list(model.image_shape)}, got {list(images.shape)}"
        )
    return images


def _check_action(model: CTVAE, action: int) -> None:
    if isinstance(action, bool) or not isinstance(action, (int, np.integer)):
        raise ValueError(f"action must be an integer index, got {action!r} "
                         f"({type(action).__name__}); see model.action_names")
    if not 0 <= int(action) < model.num_actions:
        raise ValueError(
            f"action {action} is out of range: this model has {model.num_actions} actions "
            f"(0..{model.num_actions - 1}: {', '.join(model.action_names)})"
        )
