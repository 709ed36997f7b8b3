r"""LadderVAE on the procedural 3D Shapes (shapes3d_synth): configs/laddervae_dsprites_synth.py
(its loss, weights, network, optimiser, steps and variants) with the data swapped by
configs/betavae_dsprites_synth.on_shapes3d_synth.

  python -m causal_disent.main --config=configs/laddervae_shapes3d_synth.py:small --workdir=W
  python -m causal_disent.evaluate --workdir=W       (the metric card of the encoder mean)
"""

import ml_collections

from configs import betavae_dsprites_synth, laddervae_dsprites_synth


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
    return betavae_dsprites_synth.on_shapes3d_synth(laddervae_dsprites_synth.get_config(arg))
