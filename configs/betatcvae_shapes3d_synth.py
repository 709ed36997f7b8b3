r"""β-TCVAE on the procedural 3D Shapes (shapes3d_synth): configs/betatcvae_dsprites_synth.py
(its loss, weights, network, optimiser, steps and variants) with the data swapped by
configs/betavae_dsprites_synth.on_shapes3d_synth.

  python -m causal_disent.main --config=configs/betatcvae_shapes3d_synth.py:small --workdir=W
  python -m causal_disent.evaluate --workdir=W       (the metric card of the encoder mean)
"""

import ml_collections

from configs import betatcvae_dsprites_synth, betavae_dsprites_synth


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
    return betavae_dsprites_synth.on_shapes3d_synth(betatcvae_dsprites_synth.get_config(arg))
