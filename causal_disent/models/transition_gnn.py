"""Transition GNN of the CT layer (CT-VAE paper §3.4, Eq. 2).

L_y = GNN([L_x, a, z]; M^G): a GATv2-style attention network over the N latent
nodes plus "context" nodes that only send: the action node (a learned embedding of
the action, ∅ included) and, optionally, an exogenous-noise node.

Graph convention (the paper's, used throughout the library): adjacency[b, i, j] = 1
means node j is a parent of node i, so node i aggregates messages from j. Each
latent node i receives from
  * its parents j (edge feature edge_weights[b, i, j]; j = i counts as a parent when
    adjacency[b, i, i] = 1, in addition to the next item),
  * itself, through a self-loop that is always present (edge feature 1),
  * every context node (edge feature 1).
The action node sends to every latent node, so the action reaches the output (in
the authors' code it only received edges and had no effect).

Heads (ICM principle): every layer holds A + 1 stacked attention heads; head h for
receiver i and sender j scores
    e^h_ij = a_hᵀ LeakyReLU_0.2(W^recv_h x_i + W^send_h x_j + w^edge_h w_ij + b_h),
normalises it with a softmax over i's incoming edges and sums att^h_ij · W^send_h x_j.
Latent node i outputs mask_i · head_action + (1 − mask_i) · head_∅. Only those two
heads are ever computed: the stacked parameters are gathered by action, which
saves (A + 1)/2 × the work of running every head.

Which edges exist comes from the hard `adjacency` (threshold 0.5), so a non-edge
contributes exactly nothing, forward or backward: its score is replaced by a
constant before the softmax (so its edge feature w_ij gets no gradient), and the
gradient reaching its gate is its softmax weight times the upstream gradient, the
weight being exactly 0 (exp of −1e9). An edge that was not sampled (adjacency 0)
thus gets exactly zero gradient from the likelihood; only the graph regularisers
move its logit. A sampled edge passes the likelihood's gradient to the graph twice:
through its edge feature w_ij = σ_ij·M_ij and through the gate, the normalised
attention being multiplied by adjacency[b, i, j] (1 forward, the straight-through
gradient backward).

Two backends compute the same function with the same parameter tree:
  "dense": batched einsums and a masked softmax over [B, heads, N, N + 1 + C];
  "jraph": one `jraph.GraphsTuple` for the batch with the static edge set (all N²
    latent pairs, N self-loops, C·N context edges), `jraph.segment_softmax` over
    receivers and `jax.ops.segment_sum`.
Dominant cost (both backends): the attention pre-activations, one H-vector per
(example, selected head, edge): B · 2 · N · (N + 1 + C) · H values per layer — 13.5 M
floats (54 MB) at B=16, N=64, C=1, H=100; the node projections are comparatively
small (B · 2 · N · F · H multiply-adds).
"""

from collections.abc import Mapping

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp
import jraph
import numpy as np

from causal_disent.models.pairwise import pairwise_leaky_readout

BACKENDS = ("dense", "jraph")
ATTENTION_NEGATIVE_SLOPE = 0.2  # GATv2's LeakyReLU inside the score
# Finite stand-in for −∞ on non-edges: keeps softmax and its gradient NaN-free.
NON_EDGE_SCORE = -1e9
NUM_SELECTED_HEADS = 2  # [the example's action head, the ∅ head]

HeadParams = Mapping[str, jax.Array]


def selected_head_indices(action: jax.Array, num_actions: int) -> jax.Array:
    """action [B] -> [B, 2] stacked-head indices: (action head, ∅ head = A)."""
    no_action = jnp.full_like(action, num_actions)
    return jnp.stack([action, no_action], axis=-1)


def attention_scores(pre_activation: jax.Array, attention_vector: jax.Array) -> jax.Array:
    """a_hᵀ LeakyReLU(pre): [..., H] · [..., H] -> [...].

    Written as an elementwise product and a sum (not an einsum) so that XLA fuses
    the LeakyReLU into the reduction instead of materialising it.
    """
    activated = nn.leaky_relu(pre_activation, ATTENTION_NEGATIVE_SLOPE)
    return jnp.sum(activated * attention_vector, axis=-1)


def incoming_edges(adjacency: jax.Array, num_context: int) -> tuple[jax.Array, jax.Array]:
    """Which incoming edges of every latent node exist, and their attention gate.

    Sources of receiver i are ordered (latent j = 0..N−1, self-loop, context c).

    Args:
      adjacency: [B, N, N] hard {0, 1} (straight-through) parents of each node.
      num_context: C, number of sending-only nodes (action, noise).
    Returns:
      exists: [B, N, N + 1 + C] bool, True where the edge is in the graph.
      gate: [B, N, N + 1 + C] float, adjacency on latent edges and 1 elsewhere;
        multiplies the normalised attention so gradients reach the adjacency.
    """
    batch, num_nodes, _ = adjacency.shape
    always = jnp.ones((batch, num_nodes, 1 + num_context), adjacency.dtype)
    gate = jnp.concatenate([adjacency, always], axis=-1)
    return gate > 0.5, gate


def incoming_edge_features(edge_weights: jax.Array, num_context: int) -> jax.Array:
    """[B, N, N] -> [B, N, N + 1 + C]: w_ij on latent edges, 1 on self and context."""
    batch, num_nodes, _ = edge_weights.shape
    always = jnp.ones((batch, num_nodes, 1 + num_context), edge_weights.dtype)
    return jnp.concatenate([edge_weights, always], axis=-1)


def dense_attention(
    receiver_projection: jax.Array,
    latent_sender_projection: jax.Array,
    context_sender_projection: jax.Array,
    heads: HeadParams,
    adjacency: jax.Array,
    edge_weights: jax.Array,
) -> jax.Array:
    """Attention-weighted message sum for every latent node, as batched einsums.

    Args:
      receiver_projection: [B, 2, N, H] W^recv x_i + b (score bias folded in).
      latent_sender_projection: [B, 2, N, H] W^send x_j, also the messages.
      context_sender_projection: [B, 2, C, H] W^ctx x_c of the context nodes.
      heads: the selected heads' "edge_kernel" and "attention_vector", [B, 2, H].
      adjacency, edge_weights: [B, N, N].
    Returns:
      [B, 2, N, H] aggregated messages per selected head.
    """
    num_context = context_sender_projection.shape[2]
    edge_kernel = heads["edge_kernel"][:, :, None, None, :]  # [B, 2, 1, 1, H]
    attention_vector = heads["attention_vector"][:, :, None, None, :]
    receivers = receiver_projection[:, :, :, None, :]  # [B, 2, N, 1, H]

    # The dominant term, [B, 2, N, N, H] pre-activations, through the fused kernel.
    batch, num_selected, num_nodes, hidden = receiver_projection.shape
    latent_scores = pairwise_leaky_readout(
        receiver_projection.reshape(-1, num_nodes, hidden),
        latent_sender_projection.reshape(-1, num_nodes, hidden),
        heads["attention_vector"].reshape(-1, hidden),
        ATTENTION_NEGATIVE_SLOPE,
        edge=jnp.repeat(edge_weights, num_selected, axis=0),
        edge_kernel=heads["edge_kernel"].reshape(-1, hidden),
    ).reshape(batch, num_selected, num_nodes, num_nodes)
    self_pre = receivers + latent_sender_projection[:, :, :, None, :] + edge_kernel
    context_pre = receivers + context_sender_projection[:, :, None, :, :] + edge_kernel
    scores = jnp.concatenate(
        [
            latent_scores,
            attention_scores(self_pre, attention_vector),
            attention_scores(context_pre, attention_vector),
        ],
        axis=-1,
    )  # [B, 2, N, N + 1 + C]

    exists, gate = incoming_edges(adjacency, num_context)
    attention = jax.nn.softmax(jnp.where(exists[:, None], scores, NON_EDGE_SCORE), axis=-1)
    attention = attention * gate[:, None]

    num_nodes = adjacency.shape[-1]
    latent_attention = attention[..., :num_nodes]
    self_attention = attention[..., num_nodes]
    context_attention = attention[..., num_nodes + 1 :]
    return (
        jnp.einsum("bhij,bhjd->bhid", latent_attention, latent_sender_projection)
        + self_attention[..., None] * latent_sender_projection
        + jnp.einsum("bhic,bhcd->bhid", context_attention, context_sender_projection)
    )


def build_transition_graph(
    adjacency: jax.Array, edge_weights: jax.Array, num_context: int
) -> jraph.GraphsTuple:
    """One GraphsTuple holding the batch's B graphs, with a static edge set.

    Graph b has N + C nodes (latent nodes first, then the context nodes) and, for
    every latent receiver i, the N + 1 + C candidate incoming edges in the order of
    `incoming_edges` (latent j, self-loop, context c). Edges are sorted by receiver.
    `edges` holds "weight" (edge feature), "exists" (bool) and "gate" (attention
    multiplier), each [B · N · (N + 1 + C)]; `nodes` is left None for the layers.

    Args:
      adjacency, edge_weights: [B, N, N].
      num_context: C.
    """
    batch, num_nodes, _ = adjacency.shape
    nodes_per_graph = num_nodes + num_context
    sources_per_receiver = num_nodes + 1 + num_context
    receiver = np.arange(num_nodes)[:, None]
    local_senders = np.concatenate(
        [
            np.broadcast_to(np.arange(num_nodes), (num_nodes, num_nodes)),
            receiver,
            np.broadcast_to(num_nodes + np.arange(num_context), (num_nodes, num_context)),
        ],
        axis=1,
    )  # [N, N + 1 + C]
    local_receivers = np.broadcast_to(receiver, local_senders.shape)
    graph_offset = (np.arange(batch) * nodes_per_graph)[:, None, None]

    exists, gate = incoming_edges(adjacency, num_context)
    return jraph.GraphsTuple(
        nodes=None,
        edges={
            "weight": incoming_edge_features(edge_weights, num_context).reshape(-1),
            "exists": exists.reshape(-1),
            "gate": gate.reshape(-1),
        },
        senders=jnp.asarray((local_senders + graph_offset).reshape(-1), jnp.int32),
        receivers=jnp.asarray((local_receivers + graph_offset).reshape(-1), jnp.int32),
        n_node=jnp.full((batch,), nodes_per_graph, jnp.int32),
        n_edge=jnp.full((batch,), num_nodes * sources_per_receiver, jnp.int32),
        globals=None,
    )


def jraph_attention(
    graph: jraph.GraphsTuple,
    receiver_projection: jax.Array,
    latent_sender_projection: jax.Array,
    context_sender_projection: jax.Array,
    heads: HeadParams,
) -> jax.Array:
    """Same as `dense_attention`, computed per edge of `graph` with segment ops.

    Args:
      graph: from `build_transition_graph`.
      receiver_projection, latent_sender_projection: [B, 2, N, H].
      context_sender_projection: [B, 2, C, H].
      heads: the selected heads' "edge_kernel" and "attention_vector", [B, 2, H].
    Returns:
      [B, 2, N, H] aggregated messages per selected head.
    """
    batch, num_heads, num_nodes, hidden = receiver_projection.shape
    num_context = context_sender_projection.shape[2]
    total_nodes = batch * (num_nodes + num_context)

    def flat_nodes(latent: jax.Array, context: jax.Array) -> jax.Array:
        # [B, 2, N, H], [B, 2, C, H] -> [B·(N + C), 2, H] in graph node order.
        per_graph = jnp.concatenate([latent, context], axis=2)
        return per_graph.transpose(0, 2, 1, 3).reshape(total_nodes, num_heads, hidden)

    # Context nodes receive nothing; their receiver rows are never read.
    node_receiver = flat_nodes(receiver_projection, jnp.zeros_like(context_sender_projection))
    node_sender = flat_nodes(latent_sender_projection, context_sender_projection)

    edge_graph = jnp.repeat(
        jnp.arange(batch), graph.n_edge, total_repeat_length=graph.senders.shape[0]
    )
    sender_messages = node_sender[graph.senders]  # [E, 2, H]
    pre_activation = (
        node_receiver[graph.receivers]
        + sender_messages
        + graph.edges["weight"][:, None, None] * heads["edge_kernel"][edge_graph]
    )
    scores = attention_scores(pre_activation, heads["attention_vector"][edge_graph])
    scores = jnp.where(graph.edges["exists"][:, None], scores, NON_EDGE_SCORE)
    attention = jraph.segment_softmax(
        scores, graph.receivers, total_nodes, indices_are_sorted=True
    )
    attention = attention * graph.edges["gate"][:, None]
    aggregated = jax.ops.segment_sum(
        attention[..., None] * sender_messages,
        graph.receivers,
        total_nodes,
        indices_are_sorted=True,
    )  # [B·(N + C), 2, H]
    per_graph = aggregated.reshape(batch, num_nodes + num_context, num_heads, hidden)
    return per_graph[:, :num_nodes].transpose(0, 2, 1, 3)


def project_selected_heads(features: jax.Array, kernel: jax.Array, head_index: jax.Array,
                           action_groups: int = 0) -> jax.Array:
    """features [B, N, F] through each example's two selected heads -> [B, 2, N, D].

    kernel: [A+1, F, D] stacked per head (head A is ∅); head_index: [B, 2] from
    `selected_head_indices`. The ∅ head is every example's second head, so it is one
    [B·N, F] × [F, D] product. With `action_groups` = G > 0 the batch is G equal
    groups, group g under action g (the causal mode's layout), and the action heads
    are G products of [B/G·N, F] × [F, D]; otherwise each example's action kernel is
    gathered. On 2 CPU cores, at B = 192, N = 64, F = D = 100, the grouped form is
    2.3× faster (forward and backward) than gathering both heads per example.
    """
    null = jnp.einsum("bnf,fd->bnd", features, kernel[-1])
    if action_groups:
        grouped = features.reshape(action_groups, -1, *features.shape[1:])
        action = jnp.einsum("gbnf,gfd->gbnd", grouped, kernel[:action_groups])
        action = action.reshape(null.shape)
    else:
        action = jnp.einsum("bnf,bfd->bnd", features, kernel[head_index[:, 0]])
    return jnp.stack([action, null], axis=1)


def combine_selected_heads(per_head: jax.Array, mask: jax.Array) -> jax.Array:
    """[B, 2, N, H], mask [B, N] -> mask·head_action + (1 − mask)·head_∅, [B, N, H].

    Written as a blend, not a `where`, so gradients reach the (straight-through)
    intervention mask.
    """
    mask = mask[:, :, None]
    return mask * per_head[:, 0] + (1.0 - mask) * per_head[:, 1]


class ActionHeadsGATv2Layer(nn.Module):
    """One attention layer with A + 1 stacked heads, of which each example uses two.

    Parameters (leading axis = head, head A is ∅): receiver_kernel, sender_kernel
    [A+1, F_in, H]; context_sender_kernel [A+1, F_ctx, H] (context nodes keep their
    own F_ctx features in every layer, so they need their own projection);
    edge_kernel, score_bias, attention_vector, output_bias [A+1, H].
    """

    hidden: int
    num_actions: int
    backend: str
    root_weight: bool

    @nn.compact
    def __call__(self, latent_features: jax.Array, context_features: jax.Array,
                 action: jax.Array, mask: jax.Array, adjacency: jax.Array,
                 edge_weights: jax.Array, graph: jraph.GraphsTuple | None = None,
                 action_groups: int = 0, null_action_only: bool = False) -> jax.Array:
        """latent [B, N, F_in], context [B, C, F_ctx] -> new latent features [B, N, H].

        `graph` (from `build_transition_graph`) is required by the jraph backend.
        `action_groups` > 0 promises the causal mode's layout (see
        `project_selected_heads`): action = repeat(arange(G), B / G).
        `null_action_only` promises every action is ∅ and every mask 0 (see
        `TransitionGNN`): only the ∅ head is computed.
        """
        num_heads = self.num_actions + 1
        in_features = latent_features.shape[-1]
        context_in_features = context_features.shape[-1]
        stacked_kernel_init = nn.initializers.lecun_normal(batch_axis=(0,))
        # Fan-in of the edge kernel is the scalar edge feature; of the attention
        # vector, the H pre-activations.
        edge_init = nn.initializers.normal(stddev=1.0)
        attention_init = nn.initializers.normal(stddev=self.hidden**-0.5)
        stacked = {
            "receiver_kernel": self.param(
                "receiver_kernel", stacked_kernel_init, (num_heads, in_features, self.hidden)
            ),
            "sender_kernel": self.param(
                "sender_kernel", stacked_kernel_init, (num_heads, in_features, self.hidden)
            ),
            "context_sender_kernel": self.param(
                "context_sender_kernel",
                stacked_kernel_init,
                (num_heads, context_in_features, self.hidden),
            ),
            "edge_kernel": self.param("edge_kernel", edge_init, (num_heads, self.hidden)),
            "score_bias": self.param(
                "score_bias", nn.initializers.zeros, (num_heads, self.hidden)
            ),
            "attention_vector": self.param(
                "attention_vector", attention_init, (num_heads, self.hidden)
            ),
            "output_bias": self.param(
                "output_bias", nn.initializers.zeros, (num_heads, self.hidden)
            ),
        }
        head_index = selected_head_indices(action, self.num_actions)
        if null_action_only:
            head_index = head_index[:, 1:]  # the ∅ head alone
        projected = ("receiver_kernel", "sender_kernel")  # applied to all N nodes
        heads = {  # [B, 2, ...] ([B, 1, ...] with null_action_only)
            name: value[head_index] for name, value in stacked.items() if name not in projected
        }

        def project(kernel):
            if null_action_only:
                return jnp.einsum("bnf,fd->bnd", latent_features, kernel[-1])[:, None]
            return project_selected_heads(latent_features, kernel, head_index, action_groups)

        receiver_projection = (
            project(stacked["receiver_kernel"]) + heads["score_bias"][:, :, None, :]
        )
        latent_sender_projection = project(stacked["sender_kernel"])
        context_sender_projection = jnp.einsum(
            "bcf,bhfd->bhcd", context_features, heads["context_sender_kernel"]
        )
        if self.backend == "dense":
            aggregated = dense_attention(
                receiver_projection,
                latent_sender_projection,
                context_sender_projection,
                heads,
                adjacency,
                edge_weights,
            )
        else:
            aggregated = jraph_attention(
                graph,
                receiver_projection,
                latent_sender_projection,
                context_sender_projection,
                heads,
            )
        aggregated = aggregated + heads["output_bias"][:, :, None, :]
        if self.root_weight:
            # A skip term W_root·x_i (PyG's `root_weight`): the node keeps its own
            # state however its attention is spread over its parents.
            root_kernel = self.param(
                "root_kernel", stacked_kernel_init, (num_heads, in_features, self.hidden)
            )
            aggregated = aggregated + project(root_kernel)
        if null_action_only:
            return aggregated[:, 0]
        return combine_selected_heads(aggregated, mask)


class TransitionGNN(nn.Module):
    """Predicts the codes of L_y from the node features of L_x, the action and M^G.

    Attributes:
      num_codes: K, output logits per node.
      num_actions: A; actions are int in [0, A], A meaning "no action" ∅.
      hidden: H, width of every attention head.
      num_layers: attention layers, each followed by an ELU (also before the readout).
      backend: "dense" or "jraph"; same parameters, same function.
      root_weight: whether every layer adds a skip term W_root·x_i.
    """

    num_codes: int
    num_actions: int
    hidden: int
    num_layers: int
    backend: str
    root_weight: bool

    @nn.compact
    def __call__(self, node_features: jax.Array, action: jax.Array, mask: jax.Array,
                 adjacency: jax.Array, edge_weights: jax.Array,
                 noise_node: jax.Array | None = None, action_groups: int = 0,
                 null_action_only: bool = False) -> jax.Array:
        """Per-node code logits of the transition.

        Args:
          node_features: [B, N, F] features of the latent nodes (code embedding plus
            positional embedding).
          action: [B] int, in [0, A].
          mask: [B, N] intervention mask in {0, 1} (float, may be straight-through):
            1 selects the action's heads, 0 the ∅ heads.
          adjacency: [B, N, N] in {0, 1} (float, straight-through); adjacency[b, i, j]
            = 1 means j is a parent of i.
          edge_weights: [B, N, N] edge features σ_ij · M_ij.
          noise_node: optional [B, F] features of an exogenous-noise node that sends
            to every latent node.
          action_groups: 0, or G when the batch is G equal groups with group g under
            action g (the causal mode's layout; a faster, equal computation).
          null_action_only: a promise that every action is ∅ and every mask 0 (the
            standard mode and the identity graph). The ∅ heads are then all that the
            mask selects, so only they are computed: the same logits and gradients
            for half the work (XLA merges the two equal heads' forward passes, but
            not their backward passes).
        Returns:
          logits: [B, N, K].
        """
        if self.backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {self.backend!r}")
        batch, num_nodes, num_features = node_features.shape
        chex.assert_shape(action, (batch,))
        chex.assert_shape(mask, (batch, num_nodes))
        chex.assert_shape([adjacency, edge_weights], (batch, num_nodes, num_nodes))

        action_node = nn.Embed(self.num_actions + 1, num_features, name="action_embedding")(
            action
        )
        context = [action_node]
        if noise_node is not None:
            chex.assert_shape(noise_node, (batch, num_features))
            context.append(noise_node)
        context_features = jnp.stack(context, axis=1)  # [B, C, F]

        graph = None
        if self.backend == "jraph":
            graph = build_transition_graph(adjacency, edge_weights, len(context))

        features = node_features
        for layer in range(self.num_layers):
            features = ActionHeadsGATv2Layer(
                self.hidden, self.num_actions, self.backend, self.root_weight,
                name=f"gat_layer_{layer}",
            )(features, context_features, action, mask, adjacency, edge_weights, graph,
              action_groups, null_action_only)
            features = nn.elu(features)
        logits = nn.Dense(self.num_codes, name="readout")(features)
        chex.assert_shape(logits, (batch, num_nodes, self.num_codes))
        return logits
