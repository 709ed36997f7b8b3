r"""CT-VAE on the procedural Cars3D (6 actions: +/- one step of elevation, azimuth and
car model), with the Shapes3D recipe and its variants.

  python -m causal_disent.main --config=configs/ctvae_cars3d_synth.py:small --workdir=W

Paper Table 1 (real Cars3D): action accuracy 0.71, factor accuracy 0.94. Ours, per
seed and over seeds, with the commands: docs/ctvae_results.md ("Table 1").
"""

from configs import ctvae_shapes3d


def get_config(arg: str | None = None):
    config = ctvae_shapes3d.get_config(arg)
    config.data.name = "cars3d_synth"
    return config
