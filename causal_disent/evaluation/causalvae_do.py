"""do-interventions with a trained CausalVAE (Yang et al., CausalVAE, CVPR 2021, §3.2
and Fig. 6): the public `causal_disent.causalvae_interventions` (its usage is there),
the stage's intervention figure and the counterfactual scores.
"""

import dataclasses
import functools
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from causal_disent.data import registry, splits
from causal_disent.models.causalvae import CausalVAE
from causal_disent.objectives.causalvae_variants import LabelScaling
from causal_disent.runs import causalvae as causalvae_run
from causal_disent.runs.config_file import read_config
from causal_disent.utils.images import images_to_unit_range
from causal_disent.utils.sharding import make_data_mesh


@dataclasses.dataclass(frozen=True)
class TrainedCausalVAE:
    """A trained CausalVAE with its dataset, split and label prior's scaling: what
    interventions in label units need."""

    model: CausalVAE
    params: dict
    dataset: object  # the run's dataset (data/base.py interface, with labels)
    split: dict  # "train" / "test" -> flat image indices, as the run split them
    scaling: LabelScaling  # λ₁(u) = (u − prior_offset) / prior_scale

    @classmethod
    def load(cls, workdir: str | Path) -> "TrainedCausalVAE":
        """Restores a finished (or paused) run of the `causalvae` stage from its
        workdir: its config.json and latest checkpoint, on one device."""
        workdir = Path(workdir)
        config = read_config(workdir)
        dataset = registry.dataset_from_config(config.data)
        model, params = causalvae_run.load_trained(
            config, workdir, make_data_mesh(jax.devices()[:1]), dataset)
        split = splits.configured_split(dataset, config.data)
        train_labels = dataset.labels(split["train"]).astype(np.float32)
        return cls(model=model, params=jax.device_get(params), dataset=dataset, split=split,
                   scaling=causalvae_run.label_scaling(dataset.name, train_labels))

    def codes_of_labels(self, values, concept: int | None = None) -> np.ndarray:
        """Label values -> the latent codes' units (what `intervene` takes).

        `values`: [..., n] values of every concept, or, with `concept`, values of that
        concept alone (any shape)."""
        values = np.asarray(values, np.float32)
        if concept is None:
            return (values - self.scaling.prior_offset) / self.scaling.prior_scale
        return (values - self.scaling.prior_offset[concept]) / self.scaling.prior_scale[concept]


def intervene(model: CausalVAE, params, images: np.ndarray, concept: int, value,
              at_input: bool = True, at_output: bool = True) -> np.ndarray:
    """Decoded images under do(z_concept = value).

    Args:
      model, params: a CausalVAE and its parameters.
      images: uint8 [B, H, W, ch] or [H, W, ch].
      concept: c in [0, n).
      value: a scalar, [B] (one per image) or [B, k].
      at_input, at_output: see the module docstring.
    Returns:
      uint8 images of the input's shape: sigmoid of the decoder's logits.
    """
    outputs = _intervened_outputs(model, params, images, concept, value, at_input, at_output)
    probabilities = np.asarray(jax.nn.sigmoid(outputs["reconstruction_logits"]))
    result = np.round(probabilities * 255).astype(np.uint8)
    return result[0] if np.ndim(images) == 3 else result


def reconstruct(model: CausalVAE, params, images: np.ndarray) -> np.ndarray:
    """The model's reconstructions (no intervention): uint8 of the input's shape."""
    images = check_images(model, images)
    outputs = _reconstruct(model, params, images)
    return np.round(np.asarray(jax.nn.sigmoid(outputs["reconstruction_logits"])) * 255).astype(
        np.uint8)


@functools.partial(jax.jit, static_argnames=("model",))
def _reconstruct(model, params, images):
    return model.apply({"params": params}, images_to_unit_range(images))


def intervened_codes(model: CausalVAE, params, images: np.ndarray, concept: int, value,
                     at_input: bool = True, at_output: bool = True) -> np.ndarray:
    """The latent codes the decoder reads under do(z_concept = value): [B, n, k]."""
    outputs = _intervened_outputs(model, params, images, concept, value, at_input, at_output)
    return np.asarray(outputs["decoded_z"])


def _intervened_outputs(model, params, images, concept, value, at_input, at_output):
    images = check_images(model, images)
    if isinstance(concept, bool) or not isinstance(concept, (int, np.integer)):
        raise ValueError(f"concept must be an int, got {concept!r}")
    if not 0 <= concept < model.num_concepts:
        raise ValueError(f"concept {concept} is out of range: the model has "
                         f"{model.num_concepts} concepts")
    value = np.asarray(value, np.float32)
    if value.ndim == 1:
        value = value[:, None]  # one scalar per image
    if value.ndim > 2 or (value.ndim == 2 and value.shape[0] not in (1, len(images))):
        raise ValueError(
            f"value must be a scalar, [B] or [B, k] with B = {len(images)}; got shape "
            f"{value.shape}"
        )
    return _apply_intervention(model, params, images, jnp.int32(concept), value,
                               bool(at_input), bool(at_output))


@functools.partial(jax.jit, static_argnames=("model", "at_input", "at_output"))
def _apply_intervention(model, params, images, concept, value, at_input, at_output):
    return model.apply(
        {"params": params}, images_to_unit_range(images), concept, value,
        at_input, at_output, method=CausalVAE.intervene,
    )


def check_images(model: CausalVAE, images: np.ndarray) -> np.ndarray:
    """uint8 [B, H, W, ch] (a single [H, W, ch] gains a batch axis); ValueError else."""
    images = np.asarray(images)
    if images.dtype != np.uint8:
        raise ValueError(f"images must be uint8 as the dataset renders them; got {images.dtype}")
    if images.ndim == 3:
        images = images[None]
    if images.ndim != 4 or tuple(images.shape[1:]) != tuple(model.image_shape):
        raise ValueError(
            f"images must be [B, {', '.join(map(str, model.image_shape))}] or "
            f"[{', '.join(map(str, model.image_shape))}]; got shape {images.shape}"
        )
    return images


def intervention_sweep(
    model: CausalVAE,
    params,
    image: np.ndarray,
    values: np.ndarray,
    at_input: np.ndarray,
) -> np.ndarray:
    """One row per concept: the image, then do(z_c = v) for each v of that row.

    Args:
      image: uint8 [H, W, ch].
      values: [n, V] intervention values of each concept.
      at_input: [n] bool, whether concept c is set at the mask layer's input (the
        stage passes "c has children in the learned graph"); the output is always set.
    Returns:
      uint8 [n, V + 1, H, W, ch] (column 0 the input image, unchanged).
    """
    values = np.asarray(values, np.float32)
    if values.ndim != 2 or values.shape[0] != model.num_concepts:
        raise ValueError(f"values must be [{model.num_concepts}, V]; got {values.shape}")
    image = check_images(model, image)[0]
    repeated = np.repeat(image[None], values.shape[1], axis=0)
    rows = [
        np.concatenate([image[None], intervene(model, params, repeated, c, values[c],
                                                at_input=bool(at_input[c]), at_output=True)])
        for c in range(model.num_concepts)
    ]
    return np.stack(rows)
