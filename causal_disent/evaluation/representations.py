"""Representations scored by the disentanglement metrics, for every model family.

A representation maps what the metrics sample to codes [B, D] float:

* `FactorRepresentation` reads factor indices directly (no images): the ground
  truth (`identity_representation`, the ceiling) and a random projection of it
  (`random_representation`, the floor);
* `ImageRepresentation` runs a jitted encoder on images in fixed-size batches
  (the last one padded, so nothing recompiles): encoder means for VAEs
  (`causalvae_representations`, `vae_representations`), and for the MCQ-VAE /
  CT-VAE, whose latent is a grid of discrete codes, two choices
  (`mcqvae_representations`):
    "code_indices"     one number per causal variable (node): its code index, as
                       the CT layer sees it (D = C·h·w);
    "codebook_vectors" each node's selected codebook vector (D = C·h·w·d), the
                       decoder's input.
  Neither paper compares quantised models with these metrics: CT-VAE (Gendron et
  al., 2023, §6) says the standard metrics do not apply to its quantised latent
  space and reports none, so there is no published convention to match; the card
  computes both and names which it used.
* `CachedCodes` wraps an image representation with a cache by flat image index:
  the metrics' samples of a finite factor grid repeat images (BetaVAE and FactorVAE
  alone draw ~2.9 M images from dSprites' 737 280), and a deterministic encoder
  gives a repeated image the same code, so each image is rendered and encoded once.

The metrics' sampling (`metrics.common.representations_of`) calls `codes_of_factors` when a
representation has it, else renders the images and calls the representation.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from causal_disent.data.base import FactorDataset
from causal_disent.evaluation.metrics.common import scored_factor_indices
from causal_disent.utils.sharding import padded_global_batches

# The codes of cached images are kept up to this size (the whole dSprites grid at
# D = 64 float32 codes takes 190 MB).
DEFAULT_CACHE_BYTES = 2 * 1024**3


@dataclasses.dataclass(frozen=True)
class FactorRepresentation:
    """Codes computed from factor indices [n, F] (no rendering)."""

    name: str
    description: str
    codes_of_factors: Callable[[np.ndarray], np.ndarray]


def identity_representation(dataset: FactorDataset) -> FactorRepresentation:
    """The ground-truth values of the scored factors (every factor but a nuisance one,
    `metrics.common.scored_factor_indices`), one code each: each metric's ceiling."""
    scored = scored_factor_indices(dataset)

    def codes_of_factors(factors: np.ndarray) -> np.ndarray:
        return dataset.factor_values_of(factors)[:, scored]

    return FactorRepresentation(
        name="identity",
        description="ground-truth factor values (dataset.factor_values), one code per "
                    "scored factor",
        codes_of_factors=codes_of_factors,
    )


def random_representation(dataset: FactorDataset, seed: int,
                          dim: int | None = None) -> FactorRepresentation:
    """A random linear mixture of the standardised factor values: the floor.

    codes = standardise(values) @ W with W [F, dim] i.i.d. N(0, 1) from `seed`
    over the F scored factors (dim defaults to F): every code mixes every factor, so
    the factors stay linearly recoverable (Ridgeway & Mozer's explicitness, a
    logistic regression on all codes, is high) but no code isolates one
    (disentanglement low). DCI's informativeness need not be high: its
    gradient-boosted trees split on one code at a time, and mixtures cut them up.
    """
    scored = scored_factor_indices(dataset)
    dim = len(scored) if dim is None else int(dim)
    if dim < 1:
        raise ValueError(f"random representation needs dim >= 1, got {dim}")
    values = [dataset.factor_values[f] for f in scored]
    mean = np.array([np.mean(v) for v in values])
    std = np.array([np.std(v) if np.std(v) > 0 else 1.0 for v in values])
    weights = np.random.default_rng(seed).standard_normal((len(scored), dim))

    def codes_of_factors(factors: np.ndarray) -> np.ndarray:
        return ((dataset.factor_values_of(factors)[:, scored] - mean) / std) @ weights

    return FactorRepresentation(
        name="random",
        description=f"standardised factor values times a fixed N(0, 1) matrix "
                    f"[{len(scored)}, {dim}] (seed {seed})",
        codes_of_factors=codes_of_factors,
    )


class ImageRepresentation:
    """uint8 images [B, H, W, ch] -> codes [B, D] float64 by a jitted encoder.

    `encode(params, images [b, H, W, ch] float in [0, 1]) -> [b, ...]` is jitted once
    for `batch_size` images; the codes are flattened per image.
    """

    def __init__(self, name: str, description: str, encode: Callable, params,
                 batch_size: int = 256):
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.name = name
        self.description = description
        self.batch_size = batch_size
        self._params = params
        self._encode = jax.jit(
            lambda params, images: encode(params, images.astype(jnp.float32) / 255.0)
        )

    def __call__(self, images: np.ndarray) -> np.ndarray:
        images = np.asarray(images)
        if images.ndim != 4:
            raise ValueError(f"images must be [B, H, W, ch]; got shape {images.shape}")
        codes = []
        batches = padded_global_batches(len(images), self.batch_size, None,
                                        lambda index: {"images": images[index]})
        for _, batch, keep in batches:
            out = np.asarray(self._encode(self._params, batch["images"]), np.float64)
            codes.append(out.reshape(self.batch_size, -1)[:keep])
        return np.concatenate(codes) if codes else np.zeros((0, 0))


class CachedCodes:
    """An image representation with its codes cached by flat image index.

    `codes_of_factors(factors [n, F])` renders and encodes only the images not seen
    before (in chunks of `chunk_size`), then gathers. The cache is allocated for the
    whole grid once the code width is known, if it fits in `max_bytes`; otherwise
    nothing is cached and every request is rendered.
    """

    def __init__(self, dataset: FactorDataset, representation: ImageRepresentation,
                 max_bytes: int = DEFAULT_CACHE_BYTES, chunk_size: int = 4096):
        self.dataset = dataset
        self.representation = representation
        self.name = representation.name
        self.description = representation.description
        self.max_bytes = max_bytes
        self.chunk_size = chunk_size
        self._codes: np.ndarray | None = None  # [num_images, D] float32
        self._known: np.ndarray | None = None  # [num_images] bool
        self.images_encoded = 0

    def __call__(self, images: np.ndarray) -> np.ndarray:
        return self.representation(images)

    def codes_of_factors(self, factors: np.ndarray) -> np.ndarray:
        index = self.dataset.factors_to_index(factors)
        if self._codes is None and not self._allocate(index[:1]):
            return self._encode(index)
        missing = np.unique(index[~self._known[index]])
        for start in range(0, len(missing), self.chunk_size):
            chunk = missing[start : start + self.chunk_size]
            self._codes[chunk] = self._encode(chunk)
            self._known[chunk] = True
        return self._codes[index].astype(np.float64)

    def _allocate(self, probe_index: np.ndarray) -> bool:
        width = self._encode(probe_index).shape[1]
        if self.dataset.num_images * width * 4 > self.max_bytes:
            return False
        self._codes = np.zeros((self.dataset.num_images, width), np.float32)
        self._known = np.zeros(self.dataset.num_images, bool)
        return True

    def _encode(self, index: np.ndarray) -> np.ndarray:
        self.images_encoded += len(index)
        return self.representation(self.dataset.images(index))


# ---- the models' representations ---------------------------------------------------


def mcqvae_representations(model, params, batch_size: int = 256) -> dict[str, ImageRepresentation]:
    """{"code_indices", "codebook_vectors"} of a trained MCQ-VAE (CT-VAE stage 1)."""
    mcq_params = {"params": params}

    def code_indices(params, images):
        return model.apply(params, images, method=model.encode_codes)  # [b, C, h, w]

    def codebook_vectors(params, images):
        codes = model.apply(params, images, method=model.encode_codes)
        return model.apply(params, codes, method=_embed_codes)  # [b, h, w, D]

    return {
        "code_indices": ImageRepresentation(
            "code_indices", "MCQ-VAE code index of every node (codebook-major, row, column)",
            code_indices, mcq_params, batch_size),
        "codebook_vectors": ImageRepresentation(
            "codebook_vectors", "MCQ-VAE selected codebook vector of every node, "
            "flattened (row, column, channel)", codebook_vectors, mcq_params, batch_size),
    }


def _embed_codes(module, codes):
    return module.quantizer.embed_codes(codes)


def causalvae_representations(model, params, batch_size: int = 256) -> dict[str, ImageRepresentation]:
    """{"encoder_mean", "concepts"} of a trained CausalVAE (or a baseline variant).

    "encoder_mean" is the mean of q(ε | x) [n·k], the representation a VAE is scored
    by in Locatello et al., "Challenging Common Assumptions in the Unsupervised
    Learning of Disentangled Representations", ICML 2019;
    "concepts" is the causal layer's output z [n·k] (= ε without a causal layer),
    the codes that MIC/TIC score per concept.
    """
    variables = {"params": params}

    def encoder_mean(params, images):
        return model.apply(params, images, method=model.encode)

    def concepts(params, images):
        return model.apply(params, images)["z"]

    return {
        "encoder_mean": ImageRepresentation(
            "encoder_mean", "mean of q(eps | x), all n*k dims", encoder_mean, variables,
            batch_size),
        "concepts": ImageRepresentation(
            "concepts", "causal layer output z = (I - A^T)^-1 eps, all n*k dims", concepts,
            variables, batch_size),
    }


def vae_representations(model, params, batch_size: int = 256) -> dict[str, ImageRepresentation]:
    """{"encoder_mean"} of a trained model of the VAE family (models/vae.py): the mean
    of q(z | x) [d], the representation Locatello et al. (ICML 2019) score; for a model
    with an XBlock (XAE, XVAE) also "causal_units", its Z of that mean."""

    def encoder_mean(params, images):
        return model.apply(params, images, method=model.encode)[0]

    def causal_units(params, images):
        return model.apply(params, encoder_mean(params, images), method=model.causes)

    found = {"encoder_mean": ImageRepresentation(
        "encoder_mean", "mean of q(z | x), all d latents", encoder_mean, {"params": params},
        batch_size)}
    if getattr(model, "xblock", None) is not None:
        found["causal_units"] = ImageRepresentation(
            "causal_units", "the XBlock's causal units Z of the encoder mean",
            causal_units, {"params": params}, batch_size)
    return found
