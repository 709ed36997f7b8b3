r"""CT-VAE on the procedural dSprites (10 actions: +/- one step of shape, scale,
orientation, x and y position), with the Shapes3D recipe and its variants.

  python -m causal_disent.main --config=configs/ctvae_dsprites_synth.py:small --workdir=W

Paper Table 1 (real dSprites): action accuracy 0.44, factor accuracy 0.58. Ours, per
seed and over seeds, with the commands: docs/ctvae_results.md ("Table 1").
"""

from configs import ctvae_shapes3d


def get_config(arg: str | None = None):
    config = ctvae_shapes3d.get_config(arg)
    config.data.name = "dsprites_synth"
    return config
