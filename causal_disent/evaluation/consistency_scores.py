"""The interventional-consistency scores of an autoencoder of the VAE family
("On the interventional consistency of autoencoders", ICLR 2021 submission, §2.1): INV[m, i],
EQV[m, i] and SCN[i], each 1 − a normalised error, and their heat maps.

With base samples N (hybrid samples of the test images' encodings: each unit from a
different image), responses R(N) = E(σ(D(N))) (objectives/consistency.py), and for
each noise unit m an intervention I_m setting N_m to v, unit m of another image's
encoding, two normalisations (`SCORINGS`):

"authors" (the default), as the paper's authors' code computes them
(GiuliaLanzillotta/CausalAE, metrics/LatentInvariance.py `noise_invariance`,
`noise_equivariance`, `self_consistency`): unsquared errors, s_i the standard
deviation of R(N)_i and U_m = E |v − N_m| the mean intervention size,

  INV[m, i] = 1 − E |R(I_m N)_i − R(N)_i| / s_i / U_m
  EQV[m, i] = 1 − E ‖X(I_m R(N))_i − X(R(I_m N))_i‖ / U_m
  SCN[i]    = clip(1 − E |R(N)_i − N_i| / s_i, 0, 1)

(EQV without the standard deviation, as that code's default leaves it.)

"variance", this project's earlier reading of the paper's garbled normalisation:
squared errors over the variance σ_i² of unit i of the encodings, U_m = E (v − N_m)²
/ σ_m², the equivariance pairing X(I_m R(I_m N)) against X(I_m N) over s_i² the total
variance of causal unit i over X(N), and no clip:

  INV[m, i] = 1 − E (R(I_m N)_i − R(N)_i)² / σ_i² / U_m
  EQV[m, i] = 1 − E ‖X(I_m R(I_m N))_i − X(I_m N)_i‖² / s_i² / U_m
  SCN[i]    = 1 − E (R(N)_i − N_i)² / σ_i²

X is the XBlock (identity without one), its mask the mean-field value. 1 is
perfect; 0 a response that moved as much as the intervention itself. On the
diagonal, INV near 0 means unit m registers its intervention and near 1 that the
unit is collapsed (the paper's reading); the off-diagonal mean is the paper's INV,
EQV's mean is over every entry. A unit whose encodings do not vary cannot be
intervened on: its row is NaN, and the means skip it.
"""

import functools
from pathlib import Path

import jax
import numpy as np

from causal_disent.evaluation import model_calls
from causal_disent.evaluation.drawings import draw_consistency_figure
from causal_disent.objectives import consistency
from causal_disent.utils import figures, host_memory
from causal_disent.utils.images import images_to_unit_range


def dispatched(fn, inputs: np.ndarray, batch_size: int) -> list:
    """fn over `inputs` in batches of `batch_size` rows, the last one padded (one
    compiled shape): the outputs, left on the device. Nothing waits for them, so the
    device works while the host prepares the next inputs."""
    outputs = []
    for start in range(0, len(inputs), batch_size):
        chunk = inputs[start:start + batch_size]
        padded = np.concatenate([chunk, np.repeat(chunk[-1:], batch_size - len(chunk), 0)])
        outputs.append(fn(padded))
    return outputs


def read_back(pending: list, count: int) -> list:
    """Each of `pending` (lists of `dispatched` outputs, `count` real rows each) as
    one float64 array, copied to the host in one transfer."""
    return [np.concatenate(batches)[:count].astype(np.float64)
            for batches in jax.device_get(pending)]


SCORINGS = ("authors", "variance")

# The host memory of a chunk of intervened units: each unit's passes hold its
# intervened noise, responses, equivariance pair and their causes, with float32
# copies, about this many bytes per sample and unit (float64 [T, n] arrays). In one
# chunk, memory grows as n²: 1024 samples of 500 units took 11.8 GiB, in chunks 0.7.
BYTES_PER_UNIT_ENTRY = 64
CHUNK_BYTES = 512 * 2**20


# Compiled once per model (evaluation/model_calls.py says why).
@functools.partial(jax.jit, static_argnums=0)
def _responses(model, params, inputs):
    return consistency.response(params, model, inputs)


@functools.partial(jax.jit, static_argnums=0)
def _causes(model, params, inputs):
    return consistency.causes(params, model, inputs)


# Host bytes per entry of the n × n score matrices on their way to results.json:
# the float64 arrays, their lists and the lists' JSON (measured: 352 for both
# matrices of 1500 units); the file itself takes 61.
RESULT_BYTES_PER_ENTRY = 400


def check_results_fit(units: int, num_seeds: int, field: str) -> None:
    """ValueError naming `field` when the n × n matrices of `units` units, for each of
    `num_seeds` stacked seeds, would not fit the host's available memory: a
    12-million-latent β-VAE :tiny trained, then was killed scoring them."""
    available = host_memory.available_bytes()
    needed = RESULT_BYTES_PER_ENTRY * units**2 * num_seeds
    if available is not None and needed > available:
        seeds = f" for each of {num_seeds} seeds" if num_seeds > 1 else ""
        raise ValueError(
            f"the test split's consistency scores of {units:,} units are two {units:,} × "
            f"{units:,} matrices{seeds}, about {needed / 2**30:,.1f} GiB of host memory on "
            f"their way to results.json, and the host has {available / 2**30:.1f} GiB "
            f"available; lower {field} ({units})")


def consistency_scores(model, params, images: np.ndarray, seed: int = 0,
                       batch_size: int = 256, scoring: str = "authors") -> dict:
    """The scores on `images` [T, H, W, ch] (uint8 or [0, 1] floats), normalised as
    `scoring` (`SCORINGS`): {"inv" [n][n], "eqv" [n][n], "scn" [n],
    "inv_off_diagonal", "inv_diagonal", "eqv_mean", "scn_mean", "num_samples",
    "scoring"} (nested lists and floats, NaN where undefined)."""
    if scoring not in SCORINGS:
        raise ValueError(f"the consistency scoring must be one of {SCORINGS}, got {scoring!r}")
    encode = functools.partial(model_calls.encoded_means, model, params)
    respond = functools.partial(_responses, model, params)
    cause = functools.partial(_causes, model, params)
    if images.dtype == np.uint8:
        images = np.asarray(images_to_unit_range(images))
    [encodings] = read_back([dispatched(encode, images, batch_size)], len(images))
    count, units = encodings.shape
    rng = np.random.default_rng(seed)
    noise = np.take_along_axis(encodings, rng.integers(0, count, encodings.shape), axis=0)
    valid = encodings.var(axis=0) > 0

    def run_all(fn, inputs: list) -> list:
        """fn on each of `inputs`, all dispatched before any is read back: the
        devices never wait for the host between the passes."""
        return read_back([dispatched(fn, x.astype(np.float32), batch_size) for x in inputs],
                         count)

    inv = np.full((units, units), np.nan)
    eqv = np.full((units, units), np.nan)
    plain = score = None
    # Each unit's passes hold a few [T, n] arrays: the units go in chunks whose
    # arrays fit CHUNK_BYTES, in order, so the draws (and the scores) are those of
    # one chunk of all units.
    valid_units = np.flatnonzero(valid)
    per_chunk = max(1, CHUNK_BYTES // (BYTES_PER_UNIT_ENTRY * count * units))
    chunks = [valid_units[start:start + per_chunk]
              for start in range(0, len(valid_units), per_chunk)] or [valid_units]
    for chunk in chunks:
        # Pass 1: R(I_m N) for each unit m with its intervention I_m (and R(N) first).
        interventions = []
        for unit in chunk:
            values = encodings[rng.integers(0, count, count), unit]
            intervened = noise.copy()
            intervened[:, unit] = values
            interventions.append((unit, values - noise[:, unit], intervened))
        intervened_noise = [x for _, _, x in interventions]
        if plain is None:
            plain, *responses = run_all(respond, [noise] + intervened_noise)
            score = _AuthorsScores(plain) if scoring == "authors" else _VarianceScores(
                encodings, *run_all(cause, [noise]))
        else:
            responses = run_all(respond, intervened_noise)
        # Pass 2: the causes X(·) of each unit's equivariance pair.
        pairs = [score.equivariance_pair(plain, after, intervened, unit)
                 for (unit, _, intervened), after in zip(interventions, responses)]
        causes = iter(run_all(cause, [x for pair in pairs for x in pair]))
        for (unit, shift, _), after in zip(interventions, responses):
            inv[unit] = score.invariance(after, plain, shift, unit)
            eqv[unit] = score.equivariance(next(causes), next(causes), shift, unit)
    scn = score.self_consistency(plain, noise)
    scn[~valid] = np.nan
    off_diagonal = ~np.eye(units, dtype=bool)
    return {
        "inv": inv.tolist(), "eqv": eqv.tolist(), "scn": scn.tolist(),
        "inv_off_diagonal": float(np.nanmean(np.where(off_diagonal, inv, np.nan))),
        "inv_diagonal": float(np.nanmean(np.diag(inv))),
        "eqv_mean": float(np.nanmean(eqv)),
        "scn_mean": float(np.nanmean(scn)),
        "num_samples": int(count),
        "scoring": scoring,
    }


def _safe(scale: np.ndarray) -> np.ndarray:
    """`scale` with its zeros (a unit that never moves) replaced by 1."""
    return np.where(scale > 0, scale, 1.0)


def _reimposed(noise: np.ndarray, intervened: np.ndarray, unit: int) -> np.ndarray:
    """`noise` with unit `unit` set as in `intervened`: I_m applied again."""
    out = noise.copy()
    out[:, unit] = intervened[:, unit]
    return out


class _AuthorsScores:
    """The "authors" normalisation: unsquared errors over the response's standard
    deviation s_i (ddof 1, as torch.std) and the mean intervention size."""

    def __init__(self, plain: np.ndarray):
        self.response_std = _safe(plain.std(axis=0, ddof=1))

    @staticmethod
    def equivariance_pair(plain, after, intervened, unit):
        """The noise whose causes are compared: I_m R(N) and R(I_m N)."""
        return _reimposed(plain, intervened, unit), after

    def invariance(self, after, plain, shift, unit):
        del unit  # the size is the intervention's, whichever unit
        return 1 - np.abs(after - plain).mean(axis=0) / self.response_std / np.abs(shift).mean()

    def equivariance(self, first, second, shift, unit):
        del unit
        moved = np.sqrt(((first - second) ** 2).sum(axis=-1))  # ‖·‖ over each unit
        return 1 - moved.mean(axis=0) / np.abs(shift).mean()

    def self_consistency(self, plain, noise):
        return np.clip(1 - np.abs(plain - noise).mean(axis=0) / self.response_std, 0, 1)


class _VarianceScores:
    """The "variance" normalisation: squared errors over the encodings' variance σ²
    and the intervention's size in the intervened unit's variance."""

    def __init__(self, encodings: np.ndarray, base_causes: np.ndarray):
        self.variance = _safe(encodings.var(axis=0))
        self.cause_variance = _safe(base_causes.var(axis=0).sum(axis=-1))

    @staticmethod
    def equivariance_pair(plain, after, intervened, unit):
        """The noise whose causes are compared: I_m R(I_m N) and I_m N."""
        del plain
        return _reimposed(after, intervened, unit), intervened

    def size(self, shift, unit):
        return (shift ** 2).mean() / self.variance[unit]

    def invariance(self, after, plain, shift, unit):
        return 1 - ((after - plain) ** 2).mean(axis=0) / self.variance / self.size(shift, unit)

    def equivariance(self, first, second, shift, unit):
        moved = ((first - second) ** 2).sum(axis=-1)
        return 1 - moved.mean(axis=0) / self.cause_variance / self.size(shift, unit)

    def self_consistency(self, plain, noise):
        return 1 - ((plain - noise) ** 2).mean(axis=0) / self.variance


# A gate at or above this mean-field value counts as an edge of the XBlock's graph.
EDGE_THRESHOLD = 0.5


def xblock_structure(model, params) -> dict | None:
    """The XBlock's learned graph, or None for a model without one: {"mask" [n][n]
    (M_ij, mean-field: unit j's gate into unit i), "edges" (gates >= EDGE_THRESHOLD),
    "possible_edges" (the gates that may be open), "edge_fraction"} (the paper's
    sparsity table, §4, counts the same fraction)."""
    if getattr(model, "xblock", None) is None:
        return None
    block = model.xblock
    mask = np.asarray(block.apply({"params": params["xblock"]}, method=block.parent_mask))
    support = np.asarray(block.apply({"params": params["xblock"]},
                                     method=block.parent_support))
    edges = int(((mask >= EDGE_THRESHOLD) & (support > 0)).sum())
    possible = int(support.sum())
    return {"mask": mask.round(4).tolist(), "edges": edges, "possible_edges": possible,
            "edge_fraction": edges / possible if possible else float("nan")}


# Test images the scores are computed on: n + 1 responses of each per model.
NUM_SCORED_IMAGES = 1024


def score_test_images(model, params, dataset, test_indices: np.ndarray, seed: int = 0,
                      batch_size: int = 256) -> dict:
    """`consistency_scores` on the first NUM_SCORED_IMAGES test images."""
    return consistency_scores(model, params, dataset.images(test_indices[:NUM_SCORED_IMAGES]),
                              seed, batch_size)


def save_consistency_figure(scores: dict, path, structure: dict | None = None) -> Path:
    """Writes `draw_consistency_figure(scores, structure)` as a PNG (built by a figure
    worker where there is one: `figures.save_drawn`); returns the path."""
    return figures.save_drawn(path, draw_consistency_figure, scores, structure)
