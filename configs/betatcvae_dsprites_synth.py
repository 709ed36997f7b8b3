r"""β-TCVAE (Chen et al., "Isolating Sources of Disentanglement in Variational
Autoencoders", NeurIPS 2018) on the procedural dSprites, in the setup of
configs/betavae_dsprites_synth.py (the study of Locatello et al., ICML 2019: its
network, optimiser, batch and 300 000 steps); only the objective differs: the VAE
loss + (β − 1)·TC, the total correlation of the aggregate posterior estimated by
minibatch-weighted sampling over each batch (disentanglement_lib's formulation).

  python -m causal_disent.main --config=configs/betatcvae_dsprites_synth.py --workdir=W
  python -m causal_disent.evaluate --workdir=W

The study sweeps β over 1, 2, 4, 6, 8 and 10; β = 6 here, and β = 1 is the VAE. The
estimator's dataset size is the training split's number of images, which the stage
supplies (it is not a config field).
"""

import ml_collections

from configs import betavae_dsprites_synth


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
    config = betavae_dsprites_synth.get_config(arg)
    objective = config.vae.objective = ml_collections.ConfigDict()
    objective.name = "beta_tc_vae"  # a key of objectives/vae.LOSSES
    objective.beta = 6.0  # the weight of the total correlation
    return config
