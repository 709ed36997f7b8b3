"""The causal-transition (CT) layer of CT-VAE (paper §3.4).

Given the codes of an image X (its N causal variables) and an action a, the layer
samples which variables the action touches (the intervention mask R_a), samples a
causal graph M^G over the variables (row i from the action's pair MLP where
R_a,i = 1, from the "no intervention" ∅ MLP otherwise), and runs a transition GNN
over that graph to predict the codes of Y. Conventions used everywhere:
  * actions are ints in [0, A]; A is ∅ (no action);
  * adjacency[b, i, j] = 1 means node j is a parent of node i;
  * nodes are ordered codebook-major, then row, then column.

Differences from the authors' code (we follow the paper): the action node sends to
every latent node (theirs only received edges, so the action had no effect), the
graph KL is the Bernoulli KL of Eq. 11–13 (see objectives/ct.py), and M_ij = 1 means
j is a parent of i (theirs is the transpose). Our own choices, each stated where it
is made: the positional embedding is scaled to unit norm so it does not drown the
one-hot code, and `gnn_root_weight` adds a skip term to every attention layer (on in
the library's configs; off is the authors' GATv2).
"""

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from causal_disent.models.graph import CausalGraphSampler, InterventionMask
from causal_disent.models.transition_gnn import BACKENDS, TransitionGNN

NOISE_MODES = ("off", "exo", "node")
# How the mask and the graph are taken from their probabilities: a Gumbel-Bernoulli
# draw (training, and evaluation's draws), or the most likely value (the headline).
STRUCTURES = ("sample", "most_likely")
# What replaces the graph after it is taken, to test whether it carries information:
# nothing; its edges placed uniformly at random (same count per example); every
# edge; no edge (each node then hears only itself and the context nodes).
GRAPH_ABLATIONS = ("none", "shuffled", "full", "empty")


def check_ct_config(model_config) -> None:
    """Raises ValueError naming the first field of `model_config` (the section
    `ct.model`, or a CausalTransition) that cannot build a layer."""
    if model_config.noise not in NOISE_MODES:
        raise ValueError(
            f"ct.model.noise must be one of {NOISE_MODES}, got {model_config.noise!r}"
        )
    for name, choices in (("structure", STRUCTURES), ("graph_ablation", GRAPH_ABLATIONS)):
        value = getattr(model_config, name, choices[0])
        if value not in choices:
            raise ValueError(f"the CT layer's {name} must be one of {choices}, got {value!r}")
    if model_config.gnn_backend not in BACKENDS:
        raise ValueError(
            f"ct.model.gnn_backend must be one of {BACKENDS}, got {model_config.gnn_backend!r}"
        )
    for name in ("graph_hidden", "gnn_hidden", "gnn_layers"):
        if getattr(model_config, name) < 1:
            raise ValueError(f"ct.model.{name} must be positive, got {getattr(model_config, name)}")


def sinusoidal_positions(num_positions: int, dim: int) -> np.ndarray:
    """[num_positions, dim] sinusoidal embedding of the node index (Vaswani et al.),
    scaled to unit norm per position so that, added to a one-hot code (norm 1), it
    does not drown the code (unscaled, its norm is sqrt(dim / 2))."""
    positions = np.arange(num_positions)[:, None]
    frequencies = np.exp(-np.log(10_000.0) * (np.arange(0, dim, 2) / dim))
    embedding = np.zeros((num_positions, dim), np.float32)
    embedding[:, 0::2] = np.sin(positions * frequencies)
    embedding[:, 1::2] = np.cos(positions * frequencies[: dim // 2])
    return embedding / np.linalg.norm(embedding, axis=-1, keepdims=True)


class CausalTransition(nn.Module):
    """codes of X [B, N] + action [B] -> logits of Y's codes [B, N, K] and the
    sampled causal structure.

    RNG streams: "gumbel" (mask and graph samples), "dropout" (positional-embedding
    dropout when `train`), "noise" (exogenous noise when noise != "off").

    N, K and A (`num_nodes`, `num_codes`, `num_actions`) come from the MCQ-VAE and the
    dataset; `structure` and `graph_ablation` are evaluation choices, set with
    `with_structure` on a built layer (they change no parameter); every other field
    is a key of the config section `ct.model`, which holds their values.
    `check_ct_config` checks them when the layer is constructed.
    """

    num_nodes: int
    num_codes: int
    num_actions: int
    graph_hidden: int
    gnn_hidden: int
    gnn_layers: int
    position_dropout: float
    noise: str
    gnn_backend: str
    gnn_root_weight: bool
    structure: str = "sample"
    graph_ablation: str = "none"

    def __post_init__(self):
        check_ct_config(self)
        super().__post_init__()

    def setup(self):
        self.positions = jnp.asarray(sinusoidal_positions(self.num_nodes, self.num_codes))
        most_likely = self.structure == "most_likely"
        self.intervention_mask = InterventionMask(self.num_actions, self.num_codes, most_likely)
        self.graph_sampler = CausalGraphSampler(self.num_actions, self.graph_hidden, most_likely)
        self.gnn = TransitionGNN(
            num_codes=self.num_codes, num_actions=self.num_actions, hidden=self.gnn_hidden,
            num_layers=self.gnn_layers, backend=self.gnn_backend,
            root_weight=self.gnn_root_weight)
        self.dropout = nn.Dropout(self.position_dropout)

    @property
    def null_action(self) -> int:
        return self.num_actions

    def with_structure(self, structure: str, graph_ablation: str = "none") -> "CausalTransition":
        """This layer taking its mask and graph as `structure` says, the graph then
        replaced as `graph_ablation` says; the same parameters apply."""
        return self.clone(parent=None, structure=structure, graph_ablation=graph_ablation)

    def node_features(self, codes: jax.Array, train: bool) -> jax.Array:
        """One-hot of each node's code plus its (dropped-out) positional embedding:
        [B, N] -> [B, N, K]."""
        chex.assert_shape(codes, (None, self.num_nodes))
        positions = jnp.broadcast_to(self.positions, (*codes.shape, self.num_codes))
        positions = self.dropout(positions, deterministic=not train)
        return jax.nn.one_hot(codes, self.num_codes) + positions

    def exogenous_noise(self, features: jax.Array) -> tuple[jax.Array, jax.Array | None]:
        """(node features for the GNN, noise-node features or None) per `noise`."""
        if self.noise == "off":
            return features, None
        rng = self.make_rng("noise")
        if self.noise == "exo":
            return features + jax.random.normal(rng, features.shape), None
        batch = features.shape[0]
        return features, jax.random.normal(rng, (batch, self.num_codes))

    def __call__(
        self, codes: jax.Array, action: jax.Array, *, train: bool = False,
        noise_scale: float | jax.Array = 1.0,
    ) -> dict[str, jax.Array]:
        """The transition of each example under its action (A = ∅; standard mode
        uses `null_transition`, the same function for an all-∅ batch).

        Args:
          codes: [B, N] int codes of X.
          action: [B] int in [0, A].
          noise_scale: scale of the mask and graph samplers' noise (1: the paper's
            Gumbel-Bernoulli samples; towards 0: towards the most likely structure).
        Returns:
          logits [B, N, K]; mask, mask_logits, mask_probs [B, N]; edge_logits,
          edge_probs, adjacency [B, N, N].
        """
        check_actions(action, self.num_actions)
        features = self.node_features(codes, train)
        null_logits = self.graph_sampler.network_logits(
            features, jnp.full_like(action, self.null_action)
        )
        return self._transition(codes, features, action, null_logits, noise_scale=noise_scale)

    def null_transition(self, codes: jax.Array, *, train: bool = False,
                        noise_scale: float | jax.Array = 1.0) -> dict[str, jax.Array]:
        """`__call__` with the ∅ action for every example (standard mode): the same
        outputs from the same RNG streams, with the ∅ pair MLP evaluated once.

        Under ∅, `__call__`'s "action" network is the ∅ network too. XLA merges the
        two identical forward passes but not their backward passes (their
        cotangents, mask·g and (1 − mask)·g, differ), so the pair MLP's backward,
        the largest part of a standard step, would run twice.

        Args:
          codes: [B, N] int codes of X.
        Returns:
          the dict of `__call__`.
        """
        null = jnp.full(codes.shape[:1], self.null_action, jnp.int32)
        features = self.node_features(codes, train)
        null_logits = self.graph_sampler.network_logits(features, null)
        return self._transition(codes, features, null, null_logits, action_logits=null_logits,
                                noise_scale=noise_scale, null_action_only=True)

    def all_actions(self, codes: jax.Array, *, train: bool = False,
                    noise_scale: float | jax.Array = 1.0) -> dict[str, jax.Array]:
        """The transition of every example under every action 0..A−1 (causal mode).

        The action-independent parts (node features, exogenous noise, the ∅ pair MLP)
        are computed once; the per-action parts run as one batch of A·B examples.
        Returns the outputs of `__call__` with a leading action axis: [A, B, ...].
        """
        batch = codes.shape[0]
        features = self.node_features(codes, train)
        null_logits = self.graph_sampler.network_logits(
            features, jnp.full((batch,), self.null_action, jnp.int32)
        )
        actions = jnp.repeat(jnp.arange(self.num_actions, dtype=jnp.int32), batch)

        def tile(x):
            return jnp.tile(x, (self.num_actions,) + (1,) * (x.ndim - 1))

        outputs = self._transition(
            tile(codes), tile(features), actions, tile(null_logits),
            noise=self.exogenous_noise(features), action_groups=self.num_actions,
            noise_scale=noise_scale,
        )
        return jax.tree.map(
            lambda x: x.reshape(self.num_actions, batch, *x.shape[1:]), outputs
        )

    def identity_transition(self, codes: jax.Array, *, train: bool = False) -> jax.Array:
        """GNN logits [B, N, K] over the identity graph with no action (L_id_y)."""
        batch = codes.shape[0]
        features, noise_node = self.exogenous_noise(self.node_features(codes, train))
        identity = jnp.broadcast_to(jnp.eye(self.num_nodes), (batch, self.num_nodes, self.num_nodes))
        return self.gnn(
            features, jnp.full((batch,), self.null_action, jnp.int32),
            jnp.zeros(codes.shape), identity, identity, noise_node, null_action_only=True,
        )

    def _transition(self, codes, features, action, null_logits, noise=None, action_logits=None,
                    action_groups=0, noise_scale=1.0, null_action_only=False):
        """The shared body of every transition; `action_logits` ([B, N, N]) skips
        evaluating the action's pair MLP when the caller already has its logits;
        `action_groups` and `null_action_only` as in TransitionGNN; `noise_scale` as
        in `__call__`."""
        mask = self.intervention_mask(codes, action, self.positions, noise_scale)
        if action_logits is None:
            action_logits = self.graph_sampler.network_logits(features, action)
        edge_logits = self.graph_sampler.combine(mask["mask"], action_logits, null_logits)
        graph = self.graph_sampler.sample(edge_logits, noise_scale)
        if self.graph_ablation != "none":
            graph["adjacency"] = self._ablated(graph["adjacency"])
        if noise is None:
            gnn_features, noise_node = self.exogenous_noise(features)
        else:  # shared across the tiled actions so every action sees the same noise
            reps = codes.shape[0] // noise[0].shape[0]
            gnn_features = jnp.tile(noise[0], (reps, 1, 1))
            noise_node = None if noise[1] is None else jnp.tile(noise[1], (reps, 1))
        logits = self.gnn(
            gnn_features, action, mask["mask"], graph["adjacency"],
            graph["edge_probs"] * graph["adjacency"], noise_node, action_groups=action_groups,
            null_action_only=null_action_only,
        )
        return {"logits": logits, "edge_logits": edge_logits, **mask, **graph}

    def _ablated(self, adjacency: jax.Array) -> jax.Array:
        """`adjacency` [B, N, N] replaced as `graph_ablation` says."""
        if self.graph_ablation == "full":
            return jnp.ones_like(adjacency)
        if self.graph_ablation == "empty":
            return jnp.zeros_like(adjacency)
        # "shuffled": each example's N² entries permuted at random, so the density
        # (and the edge count) stays the learned graph's and only the placement goes.
        flat = adjacency.reshape(adjacency.shape[0], -1)
        shuffled = jax.random.permutation(self.make_rng("gumbel"), flat, axis=1, independent=True)
        return shuffled.reshape(adjacency.shape)


def check_actions(action: jax.Array, num_actions: int) -> None:
    """Raises ValueError for actions outside [0, A] when the values are concrete."""
    if isinstance(action, jax.core.Tracer):
        return
    values = np.asarray(action)
    if values.size and (values.min() < 0 or values.max() > num_actions):
        raise ValueError(
            f"action indices must be in [0, {num_actions}] ({num_actions} = no action); "
            f"got values in [{values.min()}, {values.max()}]"
        )
