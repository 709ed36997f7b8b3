"""Shared pieces of the true counterfactual images of the concept datasets.

Pendulum and Flow (Yang et al., CausalVAE, CVPR 2021, §5 / App.) are drawn from
a few concepts linked by known mechanisms, so the image under an intervention
do(label[c] = v) can be drawn exactly: every descendant of c in the causal graph
is recomputed by its mechanism, every other concept keeps the factual image's
value (its exogenous noise included). Each dataset builds its intervened
scene; this module holds what they share: the descendants of a concept, the
validation of an intervention's arguments, and the base class that validates,
draws and renders both datasets' counterfactuals in bounded chunks.
"""

from __future__ import annotations

import numpy as np

from causal_disent.data.base import FactorDataset, render_in_chunks


def descendants(graph: np.ndarray, concept: int) -> np.ndarray:
    """bool [n]: the labels reachable from `concept` along the edges of `graph`.

    graph[i, j] != 0 means label i causes label j. `concept` itself is excluded
    (it is only included when it lies on a cycle).
    """
    graph = np.asarray(graph) != 0
    if graph.ndim != 2 or graph.shape[0] != graph.shape[1]:
        raise ValueError(f"graph must be a square [n, n] adjacency matrix, got shape {graph.shape}")
    check_concept(concept, tuple(str(k) for k in range(len(graph))), "the graph")
    reached = np.zeros(len(graph), bool)
    frontier = graph[concept].copy()
    while frontier.any():
        reached |= frontier
        frontier = graph[frontier].any(axis=0) & ~reached
    return reached


def check_concept(concept: int, label_names: tuple[str, ...], owner: str) -> int:
    """`concept` as an int in [0, len(label_names)); ValueError naming the problem."""
    n = len(label_names)
    listing = f"{owner} has {n} concepts ({', '.join(label_names)}); pass an int in [0, {n})"
    if isinstance(concept, (bool, np.bool_)) or not isinstance(concept, (int, np.integer)):
        kind = type(concept).__name__
        raise ValueError(f"concept must be an int, got {kind} {concept!r}: {listing}")
    if not 0 <= concept < n:
        raise ValueError(f"concept {concept} is out of range: {listing}")
    return int(concept)


def check_values(values: np.ndarray, batch: int) -> np.ndarray:
    """Intervention values as a finite float64 [batch] array; ValueError otherwise."""
    values = np.asarray(values, np.float64)
    if values.shape != (batch,):
        raise ValueError(
            f"values must have shape [B] = ({batch},), one per index, got shape {values.shape}"
        )
    require(values, np.isfinite(values), "values", "finite")
    return values


def require(values: np.ndarray, ok: np.ndarray, name: str, rule: str) -> None:
    """ValueError naming the first of `values` where `ok` is False, and the `rule`."""
    if not np.all(ok):
        position = int(np.flatnonzero(~np.asarray(ok))[0])
        raise ValueError(f"{name} must be {rule}, got {values[position]} at position {position}")


def require_finite_scene(scene: dict[str, np.ndarray]) -> None:
    """ValueError if an intervention drove a drawn quantity to inf or nan (overflow)."""
    for name, part in scene.items():
        rule = "finite (the intervention overflows it; use smaller values)"
        require(part, np.isfinite(part), name, rule)


class DrawnConceptDataset(FactorDataset):
    """A concept dataset the library draws from scene parts (Pendulum, Flow): images
    and counterfactuals are rendered in chunks of `RENDER_CHUNK` images, which bounds
    the supersampling buffers. Subclasses define `_draw(parts)` (parts [B] each ->
    uint8 images), `_render(index)` (flat indices -> uint8 images),
    `_intervened_scene(index, concept, values)` (the scene parts under the
    intervention, inputs valid) and `_check_physical(concept, values)` (ValueError
    for values no scene of theirs can have)."""

    RENDER_CHUNK = 128

    def counterfactual_images(self, index: np.ndarray, concept: int,
                              values: np.ndarray) -> np.ndarray:
        """The true images under do(label[concept] = values[b]) of the images at `index`.

        Args:
          index: [B] flat indices of the factual images.
          concept: the label intervened on, an int in [0, len(label_names)).
          values: [B] finite new values in the label's units (`labels`), within the
            limits the dataset's `_check_physical` names.
        Returns:
          [B, H, W, ch] uint8; what each intervention redraws is documented by the
          dataset's `_intervened_scene`.
        """
        index = self.check_index(index)
        concept = check_concept(concept, self.label_names, self.name)
        values = check_values(values, len(index))
        self._check_physical(concept, values)
        with np.errstate(over="ignore", invalid="ignore"):  # overflow: rejected just below
            parts = self._intervened_scene(index, concept, values)
        require_finite_scene(parts)
        return self.render_scene(parts)

    def render_scene(self, parts: dict[str, np.ndarray]) -> np.ndarray:
        """`scene` parts ([B] each) -> [B, H, W, ch] uint8 images, in chunks."""

        def draw(rows: np.ndarray) -> np.ndarray:
            return self._draw({name: part[rows] for name, part in parts.items()})

        batch = len(next(iter(parts.values())))
        return render_in_chunks(np.arange(batch), draw, self.RENDER_CHUNK, self.image_shape)

    def _images_at(self, index: np.ndarray) -> np.ndarray:
        return render_in_chunks(index, self._render, self.RENDER_CHUNK, self.image_shape)
