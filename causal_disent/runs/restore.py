"""Restoring a stage's train state from its checkpoints, placed over a mesh."""

from collections.abc import Callable

import jax
from jax.sharding import Mesh

from causal_disent.runs.checkpoint import CheckpointError, StageCheckpoints
from causal_disent.utils.sharding import replicated


def placed_like(abstract_state, mesh: Mesh):
    """Abstract arrays that restore replicated over `mesh`."""
    sharding = replicated(mesh)
    return jax.tree.map(
        lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=sharding), abstract_state
    )


def restore_trained_params(workdir, stage: str, signature: dict, create_state: Callable,
                           mesh: Mesh, missing_message: str):
    """The parameters (replicated over `mesh`) of the latest checkpoint of `stage` in
    `workdir`, whose state has the structure of `create_state()`; CheckpointError
    with `missing_message` when there is none, or naming the difference when it was
    made with another signature or cannot be read (nothing in `workdir` is changed)."""
    checkpoints = StageCheckpoints(workdir, stage, signature, 1, 1, read_only=True)
    try:
        if checkpoints.latest_step() is None:
            raise CheckpointError(missing_message.format(directory=checkpoints.directory))
        state = checkpoints.restore_latest(placed_like(jax.eval_shape(create_state), mesh))
    finally:
        checkpoints.close()
    return state.params
