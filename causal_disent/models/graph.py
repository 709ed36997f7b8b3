"""Intervention mask and causal-graph sampler of the CT layer (CT-VAE paper §3.4, Eq. 3–4).

Graph convention (the paper's, used everywhere in this library):
  adjacency[b, i, j] = 1 means node j is a parent of node i, so row i of the
  adjacency lists the nodes that node i aggregates messages from. The edge logits
  α[b, i, j] and probabilities σ(α[b, i, j]) follow the same layout. (The authors'
  code stores the transpose.)

Actions are int32 [B] in [0, A]; the value A is the "no action" ∅. There are A + 1
pair networks, network index A being the ∅ network. Randomness comes only from the
flax RNG stream "gumbel" (straight-through Gumbel-Bernoulli samples, τ = 1); with
`most_likely` set, both modules take the most likely value instead (1 where the
probability exceeds 0.5) and draw nothing: the deterministic structure that
evaluation reports as its headline.

Shapes: B batch, N latent nodes, K codes per codebook, A actions, F node-feature size,
P positional-embedding size, H hidden width of the pair MLPs.
"""

import math

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp

from causal_disent.models import gumbel
from causal_disent.models.pairwise import pairwise_leaky_readout

LEAKY_RELU_SLOPE = 0.01


def _lecun_normal(fan_in: int) -> nn.initializers.Initializer:
    """flax's lecun_normal (truncated normal, variance 1/fan_in), explicit fan-in.

    The kernels here are stacked over networks or split out of one Dense layer, so
    their fan-in cannot be read off their own shape.
    """
    # Truncating at ±2σ shrinks the std by this factor; undo it (as flax does).
    stddev = math.sqrt(1.0 / fan_in) / 0.87962566103423978

    def init(key: jax.Array, shape: tuple[int, ...], dtype=jnp.float32) -> jax.Array:
        return stddev * jax.random.truncated_normal(key, -2.0, 2.0, shape, dtype)

    return init


class InterventionMask(nn.Module):
    """Which nodes an action intervenes on, R_a ∈ {0, 1}^N (paper Eq. 4, Fig. 3).

    p_i = σ(Linear([onehot_{A+1}(a) ; PE(i)]))[code_i]: the Linear gives a K-vector of
    logits per position, read at the node's current code. The Linear over the
    concatenation is computed as W_action[a] + PE(i) @ W_position + b, which is the
    same map without building the [B, N, A+1+P] input.

    Attributes:
      num_actions: A (the ∅ action is index A, so there are A + 1 action rows).
      num_codes: K.
      most_likely: take 1[p_i > 0.5] instead of a Gumbel-Bernoulli sample.
    """

    num_actions: int
    num_codes: int
    most_likely: bool = False

    @nn.compact
    def __call__(
        self, codes: jax.Array, action: jax.Array, positions: jax.Array,
        noise_scale: float | jax.Array = 1.0,
    ) -> dict[str, jax.Array]:
        """Samples the intervention mask.

        Args:
          codes: [B, N] int codes of the input latents.
          action: [B] int in [0, A]; A means ∅ (no intervention).
          positions: [N, P] positional embedding of the node indices.
          noise_scale: the sampler's noise scale (gumbel.straight_through_bernoulli).
        Returns:
          dict with
            mask_logits: [B, N] logit of p_i (for every action, ∅ included),
            mask_probs: [B, N] σ(mask_logits), 0 where the action is ∅,
            mask: [B, N] straight-through Gumbel-Bernoulli sample (τ = 1) in {0, 1}
              (1[p_i > 0.5] when `most_likely`), exactly 0 with no gradient where
              the action is ∅.
        """
        batch, num_nodes = codes.shape
        chex.assert_shape(action, (batch,))
        chex.assert_shape(positions, (num_nodes, None))
        num_action_rows = self.num_actions + 1
        position_dim = positions.shape[-1]
        fan_in = num_action_rows + position_dim
        # One Dense(A+1+P → K) split in two, initialised as the concatenated layer.
        action_kernel = self.param(
            "action_kernel", _lecun_normal(fan_in), (num_action_rows, self.num_codes)
        )
        position_kernel = self.param(
            "position_kernel", _lecun_normal(fan_in), (position_dim, self.num_codes)
        )
        bias = self.param("bias", nn.initializers.zeros, (self.num_codes,))

        position_logits = positions @ position_kernel + bias  # [N, K]
        code_logits = action_kernel[action][:, None, :] + position_logits  # [B, N, K]
        mask_logits = jnp.take_along_axis(code_logits, codes[..., None], axis=-1)[
            ..., 0
        ]

        is_null_action = (action == self.num_actions)[:, None]  # [B, 1]
        sample = _hard_bernoulli(self, mask_logits, self.most_likely, noise_scale)
        # jnp.where, not a product, so ∅ rows carry neither a value nor a gradient.
        mask = jnp.where(is_null_action, 0.0, sample)
        mask_probs = jnp.where(is_null_action, 0.0, jax.nn.sigmoid(mask_logits))
        chex.assert_shape([mask_logits, mask, mask_probs], (batch, num_nodes))
        return {"mask_logits": mask_logits, "mask_probs": mask_probs, "mask": mask}


class CausalGraphSampler(nn.Module):
    """A + 1 pair MLPs giving edge logits, mixed per row by the mask (paper Eq. 3–4).

    Network n computes, for every ordered pair (i, j),
      α_ij = w2ᵀ LeakyReLU(U x_i + V x_j + b1) + b2,
    i.e. Linear(2F → H) on [x_i ; x_j] → LeakyReLU(0.01) → Linear(H → 1), with the
    first layer factorised (U x_i + V x_j) so it costs two [N, F] × [F, H] products
    and a broadcast add instead of N² concatenations. The A + 1 networks' weights are
    stacked: U, V [A+1, F, H], b1 [A+1, H], w2 [A+1, H], b2 [A+1].

    Cost: each evaluated network does ~4·B·N²·H flops (add, LeakyReLU, multiply-add
    with w2) on a [B, N, N, H] pre-activation, plus 4·B·N·F·H for the two products
    (running Linear(2F → H) on N² concatenations would cost 4·B·N²·F·H).
    The [B, N, N, H] pre-activation (210 MB per network at B=16, N=64, H=800) is never
    stored: `models/pairwise.py` computes the readout one example and a few rows at a
    time and recomputes it in a hand-written backward pass. `__call__` evaluates two networks (the action's
    and ∅'s); the causal mode evaluates all A, e.g. with `jax.vmap` or `jax.lax.map`
    over a leading axis of `network` (whatever is not fused away is then A times
    larger under vmap, while lax.map holds one network's at a time).

    Attributes:
      num_actions: A (network A is the ∅ network).
      hidden: H, the pair MLP's hidden width (800 in the paper).
      most_likely: `sample` takes 1[σ(α) > 0.5] instead of drawing the graph.
    """

    num_actions: int
    hidden: int
    most_likely: bool = False

    @nn.compact
    def network_logits(self, node_features: jax.Array, network: jax.Array) -> jax.Array:
        """Edge logits of one pair network per batch element.

        Args:
          node_features: [B, N, F] node features x.
          network: [B] int in [0, A], which pair MLP to run for each batch element.
        Returns:
          [B, N, N] α[b, i, j] of network `network[b]` for the pair (x_i, x_j).
        """
        batch, num_nodes, feature_dim = node_features.shape
        chex.assert_shape(network, (batch,))
        num_networks = self.num_actions + 1
        # U and V are the two halves of one Linear(2F → H) on [x_i ; x_j].
        first_init = _lecun_normal(2 * feature_dim)
        child_kernel = self.param(
            "child_kernel", first_init, (num_networks, feature_dim, self.hidden)
        )  # U, applied to x_i
        parent_kernel = self.param(
            "parent_kernel", first_init, (num_networks, feature_dim, self.hidden)
        )  # V, applied to x_j
        hidden_bias = self.param(
            "hidden_bias", nn.initializers.zeros, (num_networks, self.hidden)
        )
        output_kernel = self.param(
            "output_kernel", _lecun_normal(self.hidden), (num_networks, self.hidden)
        )
        output_bias = self.param("output_bias", nn.initializers.zeros, (num_networks,))

        # Gathering each example's weights ([B, F, H]) is cheaper than running all
        # A + 1 networks' first layers and selecting afterwards.
        child_hidden = jnp.einsum(
            "bnf,bfh->bnh", node_features, child_kernel[network]
        ) + hidden_bias[network][:, None, :]
        parent_hidden = jnp.einsum(
            "bnf,bfh->bnh", node_features, parent_kernel[network]
        )
        logits = _pair_readout(child_hidden, parent_hidden, output_kernel[network])
        logits = logits + output_bias[network][:, None, None]
        chex.assert_shape(logits, (batch, num_nodes, num_nodes))
        return logits

    def combine(
        self, mask: jax.Array, action_logits: jax.Array, null_logits: jax.Array
    ) -> jax.Array:
        """Row i from the action network where mask_i = 1, from ∅ otherwise (Eq. 4).

        Args:
          mask: [B, N] intervention mask (hard {0, 1}, straight-through gradient).
          action_logits: [B, N, N] logits of the action's network.
          null_logits: [B, N, N] logits of the ∅ network.
        Returns:
          [B, N, N] mask_i·action + (1 − mask_i)·null; the arithmetic blend (rather
          than a select) is what lets the edge loss's gradient reach the mask.
        """
        chex.assert_equal_shape([action_logits, null_logits])
        chex.assert_shape(mask, action_logits.shape[:2])
        row_mask = mask[:, :, None]
        return row_mask * action_logits + (1.0 - row_mask) * null_logits

    def sample(self, edge_logits: jax.Array,
               noise_scale: float | jax.Array = 1.0) -> dict[str, jax.Array]:
        """Samples the causal graph M ~ Bernoulli(σ(α)) (straight-through, τ = 1),
        or takes its most likely value when `most_likely`.

        Args:
          edge_logits: [B, N, N] α.
          noise_scale: the sampler's noise scale (gumbel.straight_through_bernoulli).
        Returns:
          dict with edge_probs [B, N, N] σ(α) and adjacency [B, N, N] in {0, 1}
          (adjacency[b, i, j] = 1: j is a parent of i), whose gradient is the
          relaxed sample's. Uses the "gumbel" RNG stream unless `most_likely`.
        """
        adjacency = _hard_bernoulli(self, edge_logits, self.most_likely, noise_scale)
        return {"edge_probs": jax.nn.sigmoid(edge_logits), "adjacency": adjacency}

    def __call__(
        self, node_features: jax.Array, action: jax.Array, mask: jax.Array
    ) -> dict[str, jax.Array]:
        """Edge logits, probabilities and a sampled adjacency under `action`.

        Args:
          node_features: [B, N, F] node features.
          action: [B] int in [0, A] (A = ∅).
          mask: [B, N] intervention mask from `InterventionMask`.
        Returns:
          dict with edge_logits, edge_probs, adjacency, each [B, N, N].
        """
        null_network = jnp.full_like(action, self.num_actions)
        edge_logits = self.combine(
            mask,
            self.network_logits(node_features, action),
            self.network_logits(node_features, null_network),
        )
        return {"edge_logits": edge_logits, **self.sample(edge_logits)}


def _hard_bernoulli(module: nn.Module, logits: jax.Array, most_likely: bool,
                   noise_scale: float | jax.Array = 1.0) -> jax.Array:
    """{0, 1} values of Bernoulli(σ(logits)): the most likely one, or a
    straight-through sample from `module`'s "gumbel" stream."""
    if most_likely:
        return gumbel.bernoulli_mode(logits)
    return gumbel.straight_through_bernoulli(module.make_rng("gumbel"), logits,
                                             noise_scale=noise_scale)


def _pair_readout(
    child_hidden: jax.Array, parent_hidden: jax.Array, output_kernel: jax.Array
) -> jax.Array:
    """Σ_h w2[h]·LeakyReLU(child[i, h] + parent[j, h]) for every pair (i, j).

    Args:
      child_hidden: [B, N, H] U x_i + b1.
      parent_hidden: [B, N, H] V x_j.
      output_kernel: [B, H] w2.
    Returns:
      [B, N, N] logits without the output bias.
    """
    return pairwise_leaky_readout(
        child_hidden, parent_hidden, output_kernel, LEAKY_RELU_SLOPE
    )
