r"""CT-VAE on SmallNORB (TFDS `smallnorb`, train and test joined into one grid of
category, instance, elevation, azimuth, lighting; 64x64 left-camera images), with
the Shapes3D recipe and its variants.

Real data, read from a TFDS data dir (`--config.data.data_dir=DIR`, default TFDS's);
`python -m causal_disent.data.describe smallnorb --data_dir=DIR` says how to prepare it.

  python -m causal_disent.main --config=configs/ctvae_smallnorb.py --config.data.data_dir=DIR --workdir=W

Not in the paper's Table 1.
"""

from configs import ctvae_shapes3d


def get_config(arg: str | None = None):
    config = ctvae_shapes3d.get_config(arg)
    config.data.name = "smallnorb"
    return config
