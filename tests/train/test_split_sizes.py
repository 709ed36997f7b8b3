"""The config's sizes against its dataset, before anything compiles
(train/split_sizes.py; the other checks run as bad-input cases in test_bad_input.py)."""

import pytest

from causal_disent.data.registry import get_dataset
from causal_disent.train import split_sizes
from tests.helpers import tiny_config


def test_a_code_cache_batch_larger_than_the_dataset_is_refused():
    """Two million images a batch had the process killed while stage 2 built its cache."""
    config = tiny_config()
    dataset = get_dataset(config.data.name)
    config.ct.train.code_cache_batch_size = dataset.num_images
    split_sizes.check_split_sizes(config, dataset)
    config.ct.train.code_cache_batch_size = dataset.num_images + 1
    with pytest.raises(ValueError, match=rf"^ct.train.code_cache_batch_size = "
                                         rf"{dataset.num_images + 1} is more than the "
                                         rf"{dataset.num_images} images of "
                                         rf"{config.data.name}, which the code cache encodes"):
        split_sizes.check_split_sizes(config, dataset)
