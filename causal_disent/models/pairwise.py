"""A fast, memory-light kernel for "pairwise additive MLP readouts".

Both the causal-graph pair MLPs (α_ij = w2ᵀ LeakyReLU(U x_i + V x_j + b)) and the
GATv2 attention scores of the transition GNN (e_ij = aᵀ LeakyReLU(W_r x_i + W_s x_j +
w_ij·e + b)) compute, for every ordered pair (i, j),

    out[i, j] = Σ_h a[h] · LeakyReLU(row[i, h] + col[j, h] + edge[i, j] · e[h]).

Written naively this materialises [B, N, M, H] several times for the forward and
backward passes. Here the forward splits LeakyReLU(z) = s·z + (1 − s)·relu(z) so
the linear part is O((N + M)·H), and both passes walk the pairs one example at a
time and, within an example, a few rows i at a time (a scan): each step's [rows,
M, H] pre-activations stay within a core's cache, and nothing of size [N, M, H]
is kept between the passes (the backward recomputes z). The backward takes one
row a step, so that the sums over i it accumulates add in the same order as one
contraction over the whole example would.
"""

import functools

import jax
import jax.numpy as jnp

# Each step of the forward's scan takes as many rows as keep their [rows, M, H]
# pre-activations within about this many bytes (a core's L2 cache, so that they
# are written and read back before they leave it).
_FORWARD_WORKING_SET_BYTES = 256 * 2**10


def _rows_per_step(num_rows: int, row_bytes: int, working_set_bytes: int) -> int:
    """The largest divisor of `num_rows` whose rows fit the working set (at least 1)."""
    fitting = max(1, working_set_bytes // row_bytes)
    return max(d for d in range(1, num_rows + 1) if num_rows % d == 0 and d <= fitting)


def pairwise_leaky_readout(
    row: jax.Array,
    col: jax.Array,
    out_kernel: jax.Array,
    negative_slope: float,
    edge: jax.Array | None = None,
    edge_kernel: jax.Array | None = None,
) -> jax.Array:
    """out[b, i, j] = Σ_h a[b, h]·LeakyReLU(row[b, i, h] + col[b, j, h] + edge[b, i, j]·e[b, h]).

    Args:
      row: [B, N, H] per-receiver (row) pre-activations, biases folded in.
      col: [B, M, H] per-sender (column) pre-activations.
      out_kernel: [B, H] the readout vector a.
      negative_slope: LeakyReLU slope s.
      edge: optional [B, N, M] scalar edge feature.
      edge_kernel: [B, H] the edge feature's weights e (required with `edge`).
    Returns:
      [B, N, M].
    """
    if edge is None:
        batch, num_rows, _ = row.shape
        edge = jnp.zeros((batch, num_rows, col.shape[1]), row.dtype)
        edge_kernel = jnp.zeros_like(out_kernel)
        return _readout(negative_slope, False, row, col, out_kernel, edge, edge_kernel)
    return _readout(negative_slope, True, row, col, out_kernel, edge, edge_kernel)


def reference_pairwise_leaky_readout(row, col, out_kernel, negative_slope, edge=None, edge_kernel=None):
    """The same function written directly (for tests)."""
    z = row[:, :, None, :] + col[:, None, :, :]
    if edge is not None:
        z = z + edge[..., None] * edge_kernel[:, None, None, :]
    activation = jnp.where(z > 0, z, negative_slope * z)
    return jnp.sum(activation * out_kernel[:, None, None, :], axis=-1)


@functools.partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def _readout(slope, has_edge, row, col, out_kernel, edge, edge_kernel):
    return _forward(slope, has_edge, row, col, out_kernel, edge, edge_kernel)


def _forward(slope, has_edge, row, col, out_kernel, edge, edge_kernel):
    linear = (
        jnp.einsum("bih,bh->bi", row, out_kernel)[:, :, None]
        + jnp.einsum("bjh,bh->bj", col, out_kernel)[:, None, :]
    )
    if has_edge:
        linear = linear + edge * jnp.einsum("bh,bh->b", edge_kernel, out_kernel)[:, None, None]
    num_rows, hidden = row.shape[1:]
    rows_per_step = _rows_per_step(num_rows, col.shape[1] * hidden * row.dtype.itemsize,
                                   _FORWARD_WORKING_SET_BYTES)

    def relu_part(example):
        row, col, a, edge, e = example

        def rows_step(_, rows):
            row_block, edge_block = rows  # [R, H], [R, M]
            z = _preactivation(has_edge, row_block, col, edge_block, e)
            return None, jnp.einsum("ijh,h->ij", jax.nn.relu(z), a)

        blocks = (row.reshape(-1, rows_per_step, hidden),
                  edge.reshape(-1, rows_per_step, edge.shape[-1]))
        return jax.lax.scan(rows_step, None, blocks)[1].reshape(num_rows, -1)

    relu_sum = jax.lax.map(relu_part, (row, col, out_kernel, edge, edge_kernel))
    return slope * linear + (1.0 - slope) * relu_sum


def _preactivation(has_edge, row, col, edge, edge_kernel):
    """z[i, j, h] = row[i, h] + col[j, h] (+ edge[i, j]·e[h]) for a block of rows i."""
    z = row[:, None, :] + col[None, :, :]
    if has_edge:
        z = z + edge[:, :, None] * edge_kernel
    return z


def _readout_fwd(slope, has_edge, row, col, out_kernel, edge, edge_kernel):
    residuals = (row, col, out_kernel, edge, edge_kernel)
    return _forward(slope, has_edge, *residuals), residuals


def _readout_bwd(slope, has_edge, residuals, grad):
    row, col, out_kernel, edge, edge_kernel = residuals

    def per_example(example):
        (row, col, a, edge, e), g = example

        def row_step(col_sums, one_row):
            # One receiver i: [z > 0] over its M pairs, [M, H]. (Blocks of rows, as
            # in the forward, were no faster: the step's work is two reads of it.)
            row_i, edge_i, g_i = one_row
            positive = (_preactivation(has_edge, row_i[None], col, edge_i[None], e)[0] > 0
                        ).astype(row.dtype)
            g_pos_col_sum, ge_pos_sum = col_sums
            # Each row's terms go into the sums over i as they come.
            g_pos_col_sum = g_pos_col_sum + g_i[:, None] * positive
            outputs = {"g_pos_rows": g_i @ positive}
            if has_edge:
                ge_pos_sum = ge_pos_sum + (g_i * edge_i) @ positive
                outputs["positive_ae"] = positive @ (a * e)
            return (g_pos_col_sum, ge_pos_sum), outputs

        zeros = (jnp.zeros_like(col), jnp.zeros_like(a))
        (g_pos_cols, ge_pos), per_row = jax.lax.scan(row_step, zeros, (row, edge, g))
        g_pos_rows = per_row["g_pos_rows"]  # [N, H]
        # d/dz of s·z + (1 − s)·relu(z) is s + (1 − s)·[z > 0].
        d_row = a * (slope * g.sum(1)[:, None] + (1 - slope) * g_pos_rows)
        d_col = a * (slope * g.sum(0)[:, None] + (1 - slope) * g_pos_cols)
        # Σ_ij g_ij·relu(z_ijh) without another pass over the pairs: relu(z) =
        # [z > 0]·(row_i + col_j + edge_ij·e), so it splits into the two sums above
        # (and, with an edge, the one d_e needs anyway).
        relu_sum = (row * g_pos_rows).sum(0) + (col * g_pos_cols).sum(0)
        d_a = slope * (g.sum(1) @ row + g.sum(0) @ col)
        if not has_edge:
            d_a = d_a + (1 - slope) * relu_sum
            return d_row, d_col, d_a, jnp.zeros_like(edge), jnp.zeros_like(e)
        ge = g * edge
        d_a = d_a + slope * ge.sum() * e + (1 - slope) * (relu_sum + e * ge_pos)
        d_edge = g * (slope * (a @ e) + (1 - slope) * per_row["positive_ae"])
        d_e = a * (slope * ge.sum() + (1 - slope) * ge_pos)
        return d_row, d_col, d_a, d_edge, d_e

    return jax.lax.map(per_example, ((row, col, out_kernel, edge, edge_kernel), grad))


_readout.defvjp(_readout_fwd, _readout_bwd)
