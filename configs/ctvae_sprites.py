r"""CT-VAE on Sprites (Reed et al. 2015, built by
`causal_disent.data.tfds_builders.reed2015`; +/- one step of each character
attribute and pose factor), with the Shapes3D recipe and its variants.

Real data, read from a TFDS data dir (`--config.data.data_dir=DIR`, default TFDS's);
`python -m causal_disent.data.describe sprites --data_dir=DIR` says how to prepare it.

  python -m causal_disent.main --config=configs/ctvae_sprites.py --config.data.data_dir=DIR --workdir=W

Paper Table 1: action accuracy 0.42, factor accuracy 0.82.
"""

from configs import ctvae_shapes3d


def get_config(arg: str | None = None):
    config = ctvae_shapes3d.get_config(arg)
    config.data.name = "sprites"
    return config
