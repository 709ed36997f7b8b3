r"""configs/ae_dsprites_synth.py on the procedural 3D Shapes (shapes3d_synth), the data
swapped by configs/betavae_dsprites_synth.on_shapes3d_synth.

  python -m causal_disent.main --config=configs/ae_shapes3d_synth.py:small --workdir=W
"""

import ml_collections

from configs import ae_dsprites_synth, betavae_dsprites_synth


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
    return betavae_dsprites_synth.on_shapes3d_synth(ae_dsprites_synth.get_config(arg))
