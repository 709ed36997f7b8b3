r"""CT-VAE on CelebA (TFDS `celeb_a`, faces cropped and resized to 64x64): 20 actions,
switching one of the first 10 binary attributes on or off; transitions are pairs of
images that differ in exactly that attribute among the first 10. Train, validation
and test are CelebA's published partition (`data.split_fractions` is not used;
docs/departures_ctvae.md).

Real data, read from a TFDS data dir (`--config.data.data_dir=DIR`, default TFDS's);
`python -m causal_disent.data.describe celeb_a --data_dir=DIR` says how to prepare it.

  python -m causal_disent.main --config=configs/ctvae_celeba.py --config.data.data_dir=DIR --workdir=W
"""

from configs import ctvae_shapes3d


def get_config(arg: str | None = None):
    config = ctvae_shapes3d.get_config(arg)
    config.data.name = "celeb_a"
    return config
