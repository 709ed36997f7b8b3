r"""β-VAE on the procedural 3D Shapes with CT-VAE's action retrieval: configs/
betavae_shapes3d_synth.py on CT-VAE's split (70 / 15 / 15 %), its test pairs scored at
the end by readouts of the change of the encoder mean (evaluation/pair_retrieval.py).
The single-image row of the table of pair learners in docs/baselines.md.

  python -m causal_disent.main --config=configs/betavae_probe_shapes3d_synth.py:small --workdir=W
"""

import ml_collections

from configs import adagvae_dsprites_synth, betavae_shapes3d_synth


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
    return adagvae_dsprites_synth.with_action_retrieval(betavae_shapes3d_synth.get_config(arg),
                                                        arg)
