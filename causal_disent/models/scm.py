"""CausalVAE's causal layer (linear SCM, Eq. 1) and mask layer (Eq. 2) (Yang et al.,
"CausalVAE: Disentangled Representation Learning via Neural Structural Causal
Models", CVPR 2021, §3.2).

Latents are concept-major: [B, n, k] holds n concepts of k dims each (the
authors: n = 4, k = 4); a flat [B, n·k] latent is read as n contiguous blocks of k
(`split_concepts`), concept i being dims [i·k, (i+1)·k).

Graph convention (the paper's, §3.2, and that of the data modules' CAUSAL_GRAPH):
  adjacency[j, i] ≠ 0 means concept j causes concept i (A_ji is "the causal
  strength from z_j to z_i"), so column i, A_i = A[:, i], holds the parents of i
  and the linear SCM reads z = Aᵀ z + ε, i.e. z_i = Σ_j A[j, i] z_j + ε_i.
  This is the TRANSPOSE of the CT layer's `adjacency` (models/graph.py, where row i
  lists i's parents).

Every concept's k dims share the same graph: the SCM acts along the concept axis
and independently on each of the k dims.

The mask layer (Eq. 2) is z_i = g_i(A_i ∘ z) + ε_i. With k-dim concepts, A_i ∘ z is
read as the parent-weighted sum
    (A_i ∘ z) := Σ_j A[j, i] · z_j ∈ R^k        (= (Aᵀ z)_i along the concept axis),
so that g_i maps k → hidden → k (the authors' code) and, with g_i = identity, Eq. 2 is exactly
the paper's linear remark z_i = A_iᵀ z + ε_i (§3.2). (The concatenation of the
A[j, i]·z_j, an n·k-vector, is the other reading; it does not fit g_i: k → k.)
With no self-loop (A[i, i] = 0), z_i does not feed g_i.

Interventions do(z_c = v) follow the paper (§3.2 and §6 "we need to manipulate both
the input and output nodes of the SCM layer", Fig. 6): z_c is set at the mask
layer's input, so its children see v through their g_i, and at the mask layer's
output, so the concept itself reads v. Ours: the input setting is propagated to
every descendant (`MaskLayer.propagate_intervention`), so a grandchild sees its
parent's intervened value, not the factual one (the paper's single pass stops at
the children). For an effect (no children) only the output setting matters and its
causes are untouched, since information flows from the input layer to the output
layer only.
"""

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np


def split_concepts(latents: jax.Array, num_concepts: int, concept_dim: int) -> jax.Array:
    """[B, n·k] or [B, n, k] -> [B, n, k] (concept i = flat dims [i·k, (i+1)·k)).

    Raises:
      ValueError: if the latent width is not n·k (or the shape is not [B, n, k]).
    """
    width = num_concepts * concept_dim
    if latents.ndim == 2:
        if latents.shape[-1] != width:
            raise ValueError(
                f"latent width {latents.shape[-1]} != num_concepts·concept_dim = "
                f"{num_concepts}·{concept_dim} = {width}"
            )
        return latents.reshape(latents.shape[0], num_concepts, concept_dim)
    if latents.ndim == 3:
        if latents.shape[1:] != (num_concepts, concept_dim):
            raise ValueError(
                f"latents of shape {latents.shape} do not have (num_concepts, concept_dim)"
                f" = ({num_concepts}, {concept_dim}) in their last two axes"
            )
        return latents
    raise ValueError(
        f"latents must be [B, n·k] or [B, n, k]; got shape {latents.shape}"
    )


def check_adjacency(adjacency: jax.Array, num_concepts: int | None = None) -> None:
    """Raises ValueError unless `adjacency` is a square [n, n] matrix (n = num_concepts
    when given)."""
    shape = jnp.shape(adjacency)
    if len(shape) != 2 or shape[0] != shape[1]:
        raise ValueError(f"adjacency must be a square [n, n] matrix; got shape {shape}")
    if num_concepts is not None and shape[0] != num_concepts:
        raise ValueError(
            f"adjacency is {shape[0]}x{shape[1]} but there are {num_concepts} concepts"
        )


def solve_linear_scm(adjacency: jax.Array, exogenous: jax.Array) -> jax.Array:
    """z = (I − Aᵀ)⁻¹ ε along the concept axis (Eq. 1), by one LU solve.

    Args:
      adjacency: [n, n] A, A[j, i] the strength of j → i.
      exogenous: [B, n, k] ε.
    Returns:
      [B, n, k] z, the solution of z = Aᵀ z + ε for each example and each of the k
      dims. I − Aᵀ is invertible (unit determinant) whenever A is a DAG; for a
      cyclic A it can be singular, which the DAG constraint H(A) steers away from.
    """
    check_adjacency(adjacency)
    num_concepts = adjacency.shape[0]
    if exogenous.ndim != 3 or exogenous.shape[1] != num_concepts:
        raise ValueError(
            f"exogenous must be [B, {num_concepts}, k] for a {num_concepts}x"
            f"{num_concepts} adjacency; got shape {exogenous.shape}"
        )
    batch, _, concept_dim = exogenous.shape
    system = jnp.eye(num_concepts, dtype=adjacency.dtype) - adjacency.T
    # All B·k right-hand sides share one matrix: stack them as columns so the matrix
    # is factorised once instead of once per example.
    columns = jnp.moveaxis(exogenous, 1, 0).reshape(num_concepts, batch * concept_dim)
    solution = jnp.linalg.solve(system, columns)
    return jnp.moveaxis(solution.reshape(num_concepts, batch, concept_dim), 0, 1)


def parent_inputs(latents: jax.Array, adjacency: jax.Array) -> jax.Array:
    """A_i ∘ z for every concept i: Σ_j A[j, i] z_j (the mask layer's input to g_i).

    Args:
      latents: [B, n, k] z.
      adjacency: [n, n] A.
    Returns:
      [B, n, k]; row i mixes only i's parents (the j with A[j, i] ≠ 0).
    """
    check_adjacency(adjacency, latents.shape[1])
    return jnp.einsum("ji,bjk->bik", adjacency, latents)


def intervene_latents(latents: jax.Array, concept: int | jax.Array, value) -> jax.Array:
    """Sets concept `concept` of every example to `value`: the array part of do(z_c = v).

    Args:
      latents: [B, n, k].
      concept: c, a Python/NumPy int in [0, n) (checked) or a JAX int array (may
        be traced; not checked).
      value: broadcastable to [B, k]: a scalar, a [k] vector, or [B, k] (use [B, 1]
        for one scalar per example).
    Returns:
      [B, n, k] latents with latents[:, c, :] = value and the other concepts
      untouched (a select, so no gradient flows to the replaced entries).
    """
    batch, num_concepts, concept_dim = latents.shape
    if isinstance(concept, (int, np.integer)) and not 0 <= concept < num_concepts:
        raise ValueError(f"concept {concept} is not in [0, {num_concepts})")
    value = jnp.broadcast_to(jnp.asarray(value, latents.dtype), (batch, concept_dim))
    is_intervened = (jnp.arange(num_concepts) == concept)[None, :, None]
    return jnp.where(is_intervened, value[:, None, :], latents)


class LinearSCM(nn.Module):
    """Causal layer (Eq. 1): z = (I − Aᵀ)⁻¹ ε with a learned A [n, n].

    Attributes:
      num_concepts: n.
      concept_dim: k.
      adjacency_init: initialiser of A. Zeros by default: the empty graph, which is
        a DAG (H(0) = 0) and makes the layer the identity (z = ε) at the start; the
        label loss l_u then grows the edges (the gradient of H vanishes at 0, so H
        only acts once edges exist). The diagonal is not masked: H(A) penalises
        self-loops like any other cycle, as in the paper.
    """

    num_concepts: int
    concept_dim: int
    adjacency_init: nn.initializers.Initializer = nn.initializers.zeros

    @nn.compact
    def __call__(self, exogenous: jax.Array) -> dict[str, jax.Array]:
        """Maps exogenous factors to causal latents.

        Args:
          exogenous: [B, n, k] or [B, n·k] ε (the encoder's output).
        Returns:
          dict with
            exogenous: [B, n, k] ε,
            z: [B, n, k] (I − Aᵀ)⁻¹ ε, which satisfies z = Aᵀ z + ε,
            adjacency: [n, n] A (A[j, i]: j → i).
        """
        exogenous = split_concepts(exogenous, self.num_concepts, self.concept_dim)
        adjacency = self.param(
            "adjacency", self.adjacency_init, (self.num_concepts, self.num_concepts)
        )
        latents = solve_linear_scm(adjacency, exogenous)
        chex.assert_equal_shape([latents, exogenous])
        return {"exogenous": exogenous, "z": latents, "adjacency": adjacency}


class MaskLayer(nn.Module):
    """Mask layer (Eq. 2): z_i = g_i(A_i ∘ z) + ε_i, one small MLP g_i per concept.

    g_i: Dense(k → H) → ELU → Dense(H → k), H = 32 (the authors' width). The n MLPs
    are one vectorised computation over stacked weights (kernels [n, k, H] and
    [n, H, k]), each slice initialised as flax's Dense would (lecun_normal over its
    own fan-in, zero biases). The adjacency is an input, not a parameter: it is the
    causal layer's A, shared with `LinearSCM`.

    Attributes:
      num_concepts: n.
      concept_dim: k.
      hidden: H.
    """

    num_concepts: int
    concept_dim: int
    hidden: int

    def setup(self):
        kernel_init = nn.initializers.lecun_normal(batch_axis=0)  # fan-in per concept
        n, k, h = self.num_concepts, self.concept_dim, self.hidden
        self.hidden_kernel = self.param("hidden_kernel", kernel_init, (n, k, h))
        self.hidden_bias = self.param("hidden_bias", nn.initializers.zeros, (n, h))
        self.output_kernel = self.param("output_kernel", kernel_init, (n, h, k))
        self.output_bias = self.param("output_bias", nn.initializers.zeros, (n, k))

    def mechanisms(self, inputs: jax.Array) -> jax.Array:
        """g_i applied to row i of `inputs` [B, n, k] for every i -> [B, n, k]."""
        activations = nn.elu(
            jnp.einsum("bnk,nkh->bnh", inputs, self.hidden_kernel) + self.hidden_bias
        )
        return jnp.einsum("bnh,nhk->bnk", activations, self.output_kernel) + self.output_bias

    def __call__(
        self,
        latents: jax.Array,
        adjacency: jax.Array,
        exogenous: jax.Array | None = None,
    ) -> dict[str, jax.Array]:
        """Regenerates each concept from its parents.

        Args:
          latents: [B, n, k] or [B, n·k] z (the causal layer's output).
          adjacency: [n, n] A (A[j, i]: j → i).
          exogenous: optional [B, n, k] or [B, n·k] ε, added to g's output.
        Returns:
          dict with
            parent_inputs: [B, n, k] A_i ∘ z = Σ_j A[j, i] z_j,
            parent_prediction: [B, n, k] g_i(A_i ∘ z) (what l_m compares with z),
            z: [B, n, k] g_i(A_i ∘ z) + ε_i (just g's output when ε is None).
        """
        latents = split_concepts(latents, self.num_concepts, self.concept_dim)
        check_adjacency(adjacency, self.num_concepts)
        masked = parent_inputs(latents, adjacency)
        prediction = self.mechanisms(masked)
        outputs = prediction
        if exogenous is not None:
            exogenous = split_concepts(exogenous, self.num_concepts, self.concept_dim)
            outputs = prediction + exogenous
        chex.assert_equal_shape([masked, prediction, outputs, latents])
        return {"parent_inputs": masked, "parent_prediction": prediction, "z": outputs}

    def propagate_intervention(
        self, latents: jax.Array, adjacency: jax.Array, concept: int | jax.Array, value
    ) -> jax.Array:
        """The latents z' under do(z_c = v), with every descendant of c recomputed.

        Each concept keeps its own residual z_i − g_i(A_i ∘ z) (abduction: the
        unexplained part of the factual latent), so
            z'_c = v,   z'_i = z_i + g_i(A_i ∘ z') − g_i(A_i ∘ z)   (i ≠ c).
        A concept whose parents are unchanged keeps z_i exactly (the difference is
        0), so only c's descendants move, and a grandchild sees its parent's new
        value, not the factual one. The equations are solved by n − 1 sweeps over
        all concepts at once: on a DAG, sweep t settles every concept t edges below
        c, and no path is longer than n − 1 edges, so this equals one pass in
        topological order without sorting a graph that may be soft.

        Args:
          latents: [B, n, k] z (the causal layer's output).
          adjacency: [n, n] A.
          concept, value: c and v as for `intervene_latents`.
        Returns:
          [B, n, k] z'.
        """
        latents = split_concepts(latents, self.num_concepts, self.concept_dim)
        check_adjacency(adjacency, self.num_concepts)
        factual = self.mechanisms(parent_inputs(latents, adjacency))
        counterfactual = intervene_latents(latents, concept, value)
        for _ in range(self.num_concepts - 1):
            shift = self.mechanisms(parent_inputs(counterfactual, adjacency)) - factual
            counterfactual = intervene_latents(latents + shift, concept, value)
        return counterfactual

    def intervene(
        self,
        latents: jax.Array,
        adjacency: jax.Array,
        exogenous: jax.Array | None,
        concept: int | jax.Array,
        value,
        at_input: bool = True,
        at_output: bool = True,
    ) -> dict[str, jax.Array]:
        """The mask layer under do(z_c = v) (paper §3.2, §6, Fig. 6).

        Args:
          latents, adjacency, exogenous: as for `__call__`.
          concept: c (Python int, checked, or a traced int).
          value: v, broadcastable to [B, k] (see `intervene_latents`).
          at_input: set z_c at the layer's input and propagate it to every
            descendant (`propagate_intervention`), so c's children and their
            children follow.
          at_output: set z_c at the layer's output, so the concept itself is v.
            Both (the default) is the paper's do(); `at_input` alone shows what the
            descendants receive, `at_output` alone is how an effect is intervened on.
        Returns:
          `__call__`'s dict, computed from the intervened input, with z (and only
          z) overwritten at concept c when `at_output`.
        """
        latents = split_concepts(latents, self.num_concepts, self.concept_dim)
        if at_input:
            latents = self.propagate_intervention(latents, adjacency, concept, value)
        outputs = self(latents, adjacency, exogenous)
        if at_output:
            outputs = {**outputs, "z": intervene_latents(outputs["z"], concept, value)}
        return outputs
