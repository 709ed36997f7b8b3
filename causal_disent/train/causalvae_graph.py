"""Where CausalVAE's adjacency A starts, and which entries training may move.

`objective.graph_learning` picks how A is learned from the training labels:

  "ci_tests"    (default, ours) the PC algorithm (Spirtes, Glymour & Scheines,
                "Causation, Prediction, and Search") with a nonlinear conditional-
                independence test (k-NN regression residuals, HSIC; see
                causal_disent/discovery/). It returns the Markov equivalence class
                (a CPDAG); A starts as one DAG of that class, each edge at
                `learned_edge_init`, and, with `restrict_to_learned_graph`, training
                tunes the edges' strengths but cannot add edges the tests rejected
                (A's gradient is masked to the DAG's support; A stays a parameter,
                H(A) stays in the loss). Needs no images, only the labels; saved
                to WORKDIR/graph_discovery.json and reused on resume.
  "label_loss"  the paper's pre-training (Yang et al., CausalVAE, CVPR 2021, §6 and
                App. C.3): min_A l_u(A) + λ·H(A) + (ρ/2)·H(A)² on the labels
                (`pretrain_adjacency`). Kept for comparison: l_u is a squared-error
                fit that never gets worse with more parents, so its minimum over
                DAGs is not the true graph (benchmarks/causalvae_lu_graph_ranking.py).
  "joint"       A starts at 0 and is learned jointly with everything else.

Why tests and not a likelihood score: on these datasets the effects are
(near-)deterministic functions of their causes, and a Gaussian likelihood score
(BIC with per-node variances, with linear, polynomial or k-NN regressions) rewards
whichever DAG makes the most concepts near-deterministic, not the true one; the
independences (e.g. Pendulum's two angles are independent, and dependent given
the shadow) identify the graph (docs/causalvae_graph.md).

`objective.initial_adjacency`, when not empty, sets A by hand instead (as the
authors' released code did).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax
from absl import logging

from causal_disent.discovery.graphs import is_acyclic
from causal_disent.discovery.pc import pc
from causal_disent.objectives import causalvae as cv
from causal_disent.utils import json_values

GRAPH_LEARNING = ("ci_tests", "label_loss", "joint")
DISCOVERY_FILE = "graph_discovery.json"


@dataclasses.dataclass(frozen=True)
class InitialGraph:
    """adjacency: the initial A [n, n] (None: A starts at 0); lagrangian: the
    pre-training's augmented-Lagrangian state (None: fresh); support: [n, n] 0/1,
    the entries of A training may move (None: all); report: what results.json
    records of how A was learned."""

    adjacency: np.ndarray | None = None
    lagrangian: cv.AugmentedLagrangian | None = None
    support: np.ndarray | None = None
    report: dict = dataclasses.field(default_factory=dict)


def check_hand_set_adjacency(adjacency, num_concepts: int) -> np.ndarray:
    """A hand-set A as a float32 [n, n] DAG; ValueError naming the problem otherwise."""
    adjacency = np.asarray(adjacency, np.float32)
    if adjacency.shape != (num_concepts, num_concepts):
        raise ValueError(
            f"causalvae.objective.initial_adjacency must be empty or {num_concepts}x"
            f"{num_concepts} (one row and column per concept); got shape {adjacency.shape}"
        )
    if not np.isfinite(adjacency).all():
        raise ValueError("causalvae.objective.initial_adjacency has non-finite entries")
    if not is_acyclic(adjacency, 0.0):
        raise ValueError(
            "causalvae.objective.initial_adjacency has a directed cycle (self-loops "
            "count): CausalVAE's A must be a DAG; remove an edge of the cycle"
        )
    return adjacency


def initial_graph(objective: ml_collections.ConfigDict, model, train_labels: np.ndarray,
                  unit_labels: np.ndarray, workdir: Path, seed: int) -> InitialGraph:
    """How A starts for `model` (module docstring).

    Args:
      train_labels: [N, n] raw training labels (PC standardises them itself).
      unit_labels: [N, n] the same labels in [0, 1] (l_u's range).
    """
    if not model.has_causal_layer:
        return InitialGraph()
    if len(objective.initial_adjacency):
        adjacency = check_hand_set_adjacency(objective.initial_adjacency, model.num_concepts)
        return InitialGraph(adjacency=adjacency,
                            report={"graph_learning": "hand_set",
                                    "initial_adjacency": adjacency.tolist()})
    if not model.uses_label_prior or objective.graph_learning == "joint":
        # CausalVAE-unsup has no labels to learn a graph from.
        return InitialGraph(report={"graph_learning": "joint"})
    if objective.graph_learning == "label_loss":
        adjacency, lagrangian, history = pretrain_adjacency(
            unit_labels,
            num_steps=objective.graph_pretrain_steps,
            update_every=objective.graph_pretrain_update_every,
            learning_rate=objective.graph_pretrain_learning_rate,
            initial_penalty=objective.initial_penalty, dag_c=objective.dag_c,
            progress_rate=objective.progress_rate, penalty_growth=objective.penalty_growth,
            max_penalty=objective.max_penalty, dag_tolerance=objective.dag_tolerance,
        )
        logging.info("pre-trained A on l_u: %s (H = %.3g)", adjacency.round(2).tolist(),
                     history[-1]["dag_constraint"])
        return InitialGraph(adjacency=adjacency, lagrangian=lagrangian, report={
            "graph_learning": "label_loss",
            "pretrained_adjacency": adjacency.round(4).tolist(),
            "pretraining_final": history[-1],
        })
    discovery = discovered_graph(train_labels, objective, workdir, seed)
    dag = np.asarray(discovery["dag"], np.float32)
    return InitialGraph(
        adjacency=dag * objective.learned_edge_init,
        support=dag if objective.restrict_to_learned_graph else None,
        report={"graph_learning": "ci_tests", "discovery": discovery},
    )


def discovered_graph(train_labels: np.ndarray, objective: ml_collections.ConfigDict,
                     workdir: Path, seed: int) -> dict:
    """PC on the training labels, or its saved result when the settings match.

    Returns {"settings", "cpdag", "dag", "tests": [[i, j, S, p, independent], ...],
    "seconds"}; raises ValueError if the labels are not finite or the tests admit
    no DAG."""
    settings = {"alpha": objective.ci_alpha, "neighbours": objective.ci_neighbours,
                "subsample": objective.ci_subsample,
                "num_permutations": objective.ci_permutations, "seed": seed,
                "num_labels": int(len(train_labels))}
    path = Path(workdir) / DISCOVERY_FILE
    if path.exists():
        saved = json.loads(path.read_text())
        if saved.get("settings") == settings:
            return saved
    if not np.isfinite(train_labels).all():
        bad = np.argwhere(~np.isfinite(train_labels))[0]
        raise ValueError(
            f"training label {bad[1]} of example {bad[0]} is {train_labels[tuple(bad)]}: "
            "labels must be finite to learn the graph; fix or drop those examples"
        )
    result = pc(np.asarray(train_labels, np.float64), alpha=settings["alpha"],
                neighbours=settings["neighbours"], subsample=settings["subsample"],
                num_permutations=settings["num_permutations"], seed=seed)
    if result.dag is None:
        raise ValueError(
            f"the independence tests gave a pattern with no consistent DAG "
            f"({result.cpdag.tolist()}); change config.seed or "
            "causalvae.objective.ci_alpha, or use graph_learning='joint'"
        )
    discovery = {
        "settings": settings,
        "cpdag": np.asarray(result.cpdag).tolist(),
        "dag": np.asarray(result.dag).tolist(),
        "tests": [[t.i, t.j, list(t.conditioning), round(float(t.p_value), 4), bool(t.independent)]
                  for t in result.tests],
        "seconds": round(result.seconds, 2),
    }
    logging.info("PC on %d training labels (%d tests, %.1f s): DAG %s", len(train_labels),
                 len(result.tests), result.seconds, discovery["dag"])
    if jax.process_index() == 0:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json_values.dumps(discovery, indent=1))
    return discovery


def pretrain_adjacency(
    unit_labels: np.ndarray,
    *,
    num_steps: int,
    update_every: int,
    learning_rate: float,
    initial_penalty: float,
    dag_c: float,
    progress_rate: float,
    penalty_growth: float,
    max_penalty: float,
    dag_tolerance: float,
) -> tuple[np.ndarray, cv.AugmentedLagrangian, list[dict]]:
    """Pre-trains A on the labels by the augmented Lagrangian (paper §6, App. C.3).

    Minimises l_u(A) + λ·H(A) + (ρ/2)·H(A)² (`label_graph_objective`) with full-batch
    Adam from A = 0; after every `update_every` steps (the inner solve) λ, ρ take the
    NOTEARS / DAG-GNN outer update, unless H(A) is already below `dag_tolerance`.

    Args:
      unit_labels: [N, n] labels in [0, 1] (l_u's σ range).
    Returns:
      (A [n, n], the final Lagrangian state, one {step, label_loss, dag_constraint,
      multiplier, penalty} per outer update).
    """
    unit_labels = jnp.asarray(unit_labels, jnp.float32)
    num_concepts = unit_labels.shape[1]
    optimizer = optax.adam(learning_rate)

    def inner_step(carry, _):
        adjacency, opt_state, lagrangian = carry
        grad_fn = jax.grad(cv.label_graph_objective, has_aux=True)
        grads, _ = grad_fn(adjacency, unit_labels, lagrangian, dag_c)
        updates, opt_state = optimizer.update(grads, opt_state)
        return (optax.apply_updates(adjacency, updates), opt_state, lagrangian), None

    @jax.jit
    def outer_step(adjacency, opt_state, lagrangian):
        (adjacency, opt_state, _), _ = jax.lax.scan(
            inner_step, (adjacency, opt_state, lagrangian), None, length=update_every
        )
        _, terms = cv.label_graph_objective(adjacency, unit_labels, lagrangian, dag_c)
        updated = cv.update_augmented_lagrangian(
            lagrangian, terms["dag_constraint"], progress_rate=progress_rate,
            penalty_growth=penalty_growth, max_penalty=max_penalty,
        )
        due = terms["dag_constraint"] > dag_tolerance
        lagrangian = jax.tree.map(lambda new, old: jnp.where(due, new, old), updated, lagrangian)
        return adjacency, opt_state, lagrangian, terms

    adjacency = jnp.zeros((num_concepts, num_concepts), jnp.float32)
    opt_state = optimizer.init(adjacency)
    lagrangian = cv.AugmentedLagrangian.create(penalty=initial_penalty)
    history = []
    for outer in range(max(1, num_steps // update_every)):
        adjacency, opt_state, lagrangian, terms = outer_step(adjacency, opt_state, lagrangian)
        history.append({
            "step": (outer + 1) * update_every,
            "label_loss": float(terms["label_loss"]),
            "dag_constraint": float(terms["dag_constraint"]),
            "multiplier": float(lagrangian.multiplier),
            "penalty": float(lagrangian.penalty),
        })
    return np.asarray(adjacency), lagrangian, history
