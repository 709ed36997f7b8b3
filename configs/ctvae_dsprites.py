r"""CT-VAE on dSprites (TFDS `dsprites`; 10 actions: +/- one step of shape, scale,
orientation, x and y position), with the Shapes3D recipe and its variants.

Real data, read from a TFDS data dir (`--config.data.data_dir=DIR`, default TFDS's);
`python -m causal_disent.data.describe dsprites --data_dir=DIR` says how to prepare it.

  python -m causal_disent.main --config=configs/ctvae_dsprites.py --config.data.data_dir=DIR --workdir=W

Paper Table 1: action accuracy 0.44, factor accuracy 0.58.
"""

from configs import ctvae_shapes3d


def get_config(arg: str | None = None):
    config = ctvae_shapes3d.get_config(arg)
    config.data.name = "dsprites"
    return config
