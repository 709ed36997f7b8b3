"""Range checks of the config fields every stage shares, before anything compiles.

Left unchecked, `batch_size=-8` compiles for a minute and dies allocating 109 GB,
`batch_size=0` or `checkpoint_every_steps=0` divide by zero after compiling, and
`num_steps=-5` "trains" -5 steps. The fields are recognised by name wherever they sit
in the config (`mcqvae.optim.batch_size`, `vae.train.log_every_steps`, ...), so a new
stage's sections are checked without registering them.
"""

import math

import ml_collections

# name -> (test, what it must be)
_RULES = {
    "batch_size": (lambda v: _is_int(v) and v > 0, "an integer > 0"),
    "eval_batch_size": (lambda v: _is_int(v) and v > 0, "an integer > 0"),
    "checkpoint_every_steps": (lambda v: _is_int(v) and v > 0, "an integer > 0"),
    "log_every_steps": (lambda v: _is_int(v) and v > 0, "an integer > 0"),
    "max_checkpoints_to_keep": (lambda v: _is_int(v) and v > 0, "an integer > 0"),
    "num_steps": (lambda v: _is_int(v) and v >= 0, "an integer >= 0"),
    "num_epochs": (lambda v: _is_int(v) and v >= 0, "an integer >= 0"),
    "eval_every_steps": (lambda v: _is_int(v) and v >= 0, "an integer >= 0 (0 = never)"),
    "prefetch_batches": (lambda v: _is_int(v) and v >= 0, "an integer >= 0 (0 = none)"),
    "num_eval_images": (lambda v: _is_int(v) and v >= 0, "an integer >= 0 (0 = all)"),
    "num_test_pairs": (lambda v: _is_int(v) and v > 0, "an integer > 0"),
    "num_draws": (lambda v: _is_int(v) and v >= 0, "an integer >= 0 (0 = none)"),
    "num_curve_images": (lambda v: _is_int(v) and v >= 0, "an integer >= 0"),
    "num_curve_pairs": (lambda v: _is_int(v) and v >= 0, "an integer >= 0"),
    "warmup_steps": (lambda v: _is_int(v) and v >= 0, "an integer >= 0 (0 = none)"),
    "seed": (lambda v: _is_int(v) and v >= 0, "an integer >= 0"),
    "split_seed": (lambda v: _is_int(v) and v >= 0, "an integer >= 0"),
    "learning_rate": (lambda v: _is_number(v) and math.isfinite(v) and v > 0,
                      "a finite number > 0"),
    "min_seconds_between_checkpoints": (lambda v: _is_number(v) and math.isfinite(v)
                                        and v >= 0, "a finite number >= 0 (0 = no bound)"),
}


# The weights of loss terms and the VQ commitment cost, wherever they sit: a negative
# one turns its term into a reward that training maximises (a negative commitment
# cost trained to the end with exit status 0), a non-finite one makes every loss NaN.
LOSS_WEIGHT_FIELDS = frozenset({
    "beta", "gamma", "c_max", "commitment_cost", "graph_kl", "lambda_d_factor", "lambda_od"})
_LOSS_WEIGHT_RULE = (lambda v: _is_number(v) and math.isfinite(v) and v >= 0,
                     ">= 0 and finite (a loss weight)")


def check_ranges(config: ml_collections.ConfigDict) -> None:
    """Raises ValueError naming the first field (by its full path) whose value is
    out of range, with what it must be."""
    for path, value in _fields(config):
        rule = _RULES.get(path.rsplit(".", 1)[-1])
        if rule is None and is_loss_weight(path) and not isinstance(value, bool):
            rule = _LOSS_WEIGHT_RULE
        if rule is not None and not rule[0](value):
            if rule is _LOSS_WEIGHT_RULE:
                raise ValueError(f"{path} must be >= 0, got {value!r}: a loss weight must be "
                                 f"finite and >= 0")
            raise ValueError(f"{path} must be {rule[1]}, got {value!r}")


def is_loss_weight(path: str) -> bool:
    """Whether the dotted field `path` weighs a loss term: a LOSS_WEIGHT_FIELDS name,
    a name ending in `_weight`, or any field of a `weights` section (flags, such as
    the GNN's `root_weight`, are switches, not weights)."""
    parts = path.split(".")
    return (parts[-1] in LOSS_WEIGHT_FIELDS or parts[-1].endswith("_weight")
            or (len(parts) > 1 and parts[-2] == "weights"))


def _fields(node, prefix: str = ""):
    for key, value in node.items():
        if isinstance(value, (ml_collections.ConfigDict, dict)):
            yield from _fields(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def sections_with(node, field: str, prefix: str = ""):
    """(dotted path, section) of every section of `node` holding `field`, at any depth
    (e.g. every stage's `train` section holding `steps_per_call`)."""
    for key, value in node.items():
        if isinstance(value, (ml_collections.ConfigDict, dict)):
            path = f"{prefix}{key}"
            if field in value:
                yield path, value
            yield from sections_with(value, field, path + ".")


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
