r"""CT-VAE on the procedural Sprites (18 actions: +/- one step of each of the nine
character attributes and pose factors), with the Shapes3D recipe and its variants.

  python -m causal_disent.main --config=configs/ctvae_sprites_synth.py:small --workdir=W

Paper Table 1 (real Sprites): action accuracy 0.42, factor accuracy 0.82. Ours, per
seed and over seeds, with the commands: docs/ctvae_results.md ("Table 1").
"""

from configs import ctvae_shapes3d


def get_config(arg: str | None = None):
    config = ctvae_shapes3d.get_config(arg)
    config.data.name = "sprites_synth"
    return config
