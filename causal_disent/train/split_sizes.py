"""The config's sizes against its dataset's splits, before anything compiles.

Left unchecked, a split fraction of 0 for the test split trains a whole run and then
fails to score it; a batch larger than the training split fails in the input
pipeline once the model is built; an evaluation batch of ten million images asks the
host for 38 GiB after training (a code cache batch of two million images had the
process killed); and a learning curve of 0 images fails at its first point. Each is
one line here instead, naming the field and a value that works.
"""

import ml_collections

from causal_disent.data import splits

# The stages whose training batches are drawn from the training split's images
# (pipeline.EpochShuffledBatches: a batch cannot hold more than the split). CT-VAE's
# stage 2 draws transitions, as many as it likes from few images.
IMAGE_BATCH_STAGES = ("mcqvae", "vae", "causalvae")

# Per train section: the field counting a learning-curve point's test items.
_CURVE_FIELDS = ("num_curve_images", "num_curve_pairs")


def check_split_sizes(config: ml_collections.ConfigDict, dataset) -> None:
    """ValueError naming the field when a split the stages need is empty, or a batch
    asks for more images than its split has."""
    split = splits.configured_split(dataset, config.data)
    sizes = {name: len(indices) for name, indices in split.items()}
    fractions = tuple(config.data.split_fractions)
    for name, use in (("train", "every stage trains on it"),
                      ("test", "every stage scores on it")):
        if sizes[name] == 0:
            raise ValueError(
                f"data.split_fractions {fractions} leave the {name} split of "
                f"{config.data.name} empty (0 of {sum(sizes.values())} images); {use}: "
                f"give it a fraction, e.g. (0.9, 0.0, 0.1)")
    for stage in config.stages:
        section = config[stage]
        batch_size = section.optim.batch_size
        if stage in IMAGE_BATCH_STAGES and batch_size > sizes["train"]:
            raise ValueError(
                f"{stage}.optim.batch_size = {batch_size} is more than the "
                f"{sizes['train']} images of {config.data.name}'s training split; "
                f"lower it")
        eval_batch_size = section.train.eval_batch_size
        if eval_batch_size > sizes["test"]:
            raise ValueError(
                f"{stage}.train.eval_batch_size = {eval_batch_size} is more than the "
                f"{sizes['test']} images of {config.data.name}'s test split, which no "
                f"evaluation batch needs; lower it")
        cache_batch_size = section.train.get("code_cache_batch_size", 0)
        if cache_batch_size > dataset.num_images:  # the code cache encodes every image
            raise ValueError(
                f"{stage}.train.code_cache_batch_size = {cache_batch_size} is more than the "
                f"{dataset.num_images} images of {config.data.name}, which the code cache "
                f"encodes; lower it (e.g. --config.{stage}.train.code_cache_batch_size="
                f"{dataset.num_images})")


def check_curve_sizes(config: ml_collections.ConfigDict) -> None:
    """ValueError when a stage draws learning-curve points (`eval_every_steps` > 0)
    from no test items."""
    for stage in config.stages:
        train = config[stage].train
        if train.get("eval_every_steps", 0) <= 0:
            continue
        for field in _CURVE_FIELDS:
            if field in train and train[field] < 1:
                raise ValueError(
                    f"{stage}.train.{field} = {train[field]} draws no test items for the "
                    f"learning curve that {stage}.train.eval_every_steps = "
                    f"{train.eval_every_steps} asks for; set it >= 1, or "
                    f"eval_every_steps = 0 for no curve")
