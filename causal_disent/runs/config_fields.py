"""What a config field changes: what a run computes, or only how it executes. Shared
by the checks that hold a config against a run's (a training command in a workdir
that holds a run: train/resumed_config.py; the runs of one summarize group:
evaluation/card_summary.py)."""

import json

import ml_collections

from causal_disent.utils import json_values

# How a run executes, not what it computes (checkpoint, log and prefetch schedules,
# steps per call, where the data lives).
EXECUTION_FIELDS = frozenset({
    "stages", "seed_execution", "data.data_dir",
    *(f"train.{name}" for name in (
        "cache_images", "checkpoint_every_steps", "code_cache_batch_size",
        "code_cache_max_gb", "code_source", "device_data", "device_data_max_gb",
        "eval_batch_size", "log_every_steps", "max_checkpoints_to_keep",
        "min_seconds_between_checkpoints", "prefetch_batches", "steps_per_call",
        "unroll_call")),
})
# How long a stage trains, and how it is scored (the learning curve's sizes apart:
# its points are only comparable at one size).
LENGTH_FIELDS = frozenset({"train.num_steps", "train.num_epochs"})
CURVE_SIZE_FIELDS = frozenset({"train.num_curve_images", "train.num_curve_pairs"})
SCORING_FIELDS = frozenset(f"train.{name}" for name in (
    "compare_workdirs", "eval_every_steps", "figure_values", "graph_threshold",
    "num_counterfactual_images", "num_eval_images"))
# A stage's sections that only say how it is scored once trained (CT-VAE's test
# pairs, a VAE's action retrieval): every field in them is a scoring field.
SCORING_SECTIONS = frozenset({"eval", "retrieval"})


def section_and_field(path: str) -> tuple[str, str]:
    """"vae.train.num_steps" -> ("vae", "train.num_steps")."""
    section, _, field = path.partition(".")
    return section, field


def only_scoring(field: str) -> bool:
    """Whether a stage's `field` ("train.num_eval_images", "eval.headline", as
    `section_and_field` gives it) changes only how the stage is scored."""
    return field in SCORING_FIELDS or field.partition(".")[0] in SCORING_SECTIONS


def only_execution(path: str) -> bool:
    """Whether the dotted config `path` changes only how a run executes."""
    return path in EXECUTION_FIELDS or section_and_field(path)[1] in EXECUTION_FIELDS


def differences(first: ml_collections.ConfigDict, second: ml_collections.ConfigDict) -> list:
    """(dotted path, first's value, second's value) of every field that differs, values
    as config.json holds them (tuples as lists)."""
    return list(json_values.differences(_as_json(first), _as_json(second)))


def computing_differences(first: ml_collections.ConfigDict,
                          second: ml_collections.ConfigDict) -> list:
    """`differences` in what the runs compute: the fields of how they execute left out."""
    return [difference for difference in differences(first, second)
            if not only_execution(difference[0])]


def describe(found: list, first: str, second: str, shown: int = 4) -> str:
    """The first `shown` differences as "path is A <first>, B <second>", the rest
    counted."""
    named = "; ".join(f"{path} is {_shown(old, new)} {first}, {_shown(new, old)} {second}"
                      for path, old, new in found[:shown])
    return named + (f" (and {len(found) - shown} more)" if len(found) > shown else "")


def _shown(value, other) -> str:
    """A field's value as an error shows it: a whole section (one config has it, the
    other not, e.g. a β-VAE run against a CT-VAE run) by name, not its contents."""
    if isinstance(value, dict):
        return "a section"
    if value is None and isinstance(other, dict):
        return "absent"
    return repr(value)


def _as_json(config: ml_collections.ConfigDict) -> dict:
    return json.loads(config.to_json_best_effort())
