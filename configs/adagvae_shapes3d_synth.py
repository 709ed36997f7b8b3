r"""Ada-GVAE on the procedural 3D Shapes (shapes3d_synth): configs/adagvae_dsprites_synth.py
with the data swapped (configs/betavae_dsprites_synth.on_shapes3d_synth).

  python -m causal_disent.main --config=configs/adagvae_shapes3d_synth.py:small --workdir=W
"""

import ml_collections

from configs import adagvae_dsprites_synth, betavae_dsprites_synth


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
    return betavae_dsprites_synth.on_shapes3d_synth(adagvae_dsprites_synth.get_config(arg))
