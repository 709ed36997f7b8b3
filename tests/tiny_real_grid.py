"""`python -m causal_disent.main` with one real dataset's class shrunk to a tiny grid,
so that a real-data config runs end to end on a small fixture in the real on-disk
format (tests/test_real_configs.py). Everything but the grid's sizes is the shipped
code: the TFDS reading, the factor table, the config, both stages.

  python -m tests.tiny_real_grid DATASET SIZES --config=configs/ctvae_DATASET.py:tiny ...

SIZES are the grid's factor sizes, comma-separated (each at most the real one); each
factor keeps its first values.
"""

import sys

from absl import app


def shrink(class_name: str, sizes: tuple[int, ...]) -> None:
    from causal_disent.data import tfds_datasets

    cls = getattr(tfds_datasets, class_name)
    if len(sizes) != len(cls.factor_sizes) or any(
            not 1 <= s <= real for s, real in zip(sizes, cls.factor_sizes)):
        sys.exit(f"error: sizes {sizes} do not fit {class_name}'s grid {cls.factor_sizes}")
    cls.factor_values = tuple(values[:s] for values, s in zip(cls.factor_values, sizes))
    cls.factor_sizes = sizes


def entry() -> None:
    class_name, sizes, *flags = sys.argv[1:]
    shrink(class_name, tuple(int(s) for s in sizes.split(",")))
    sys.argv = [sys.argv[0], *flags]
    from causal_disent import cli, main

    app.run(main.main, flags_parser=cli.parse_flags_or_exit)


if __name__ == "__main__":
    entry()
