r"""DIP-VAE-I (Kumar et al., "Variational Inference of Disentangled Latent Concepts
from Unlabeled Observations", ICLR 2018) on the procedural dSprites, in the setup of
configs/betavae_dsprites_synth.py (the study of Locatello et al., ICML 2019: its
network, optimiser, batch and 300 000 steps); only the objective differs: the VAE
loss + λ_od·Σ_{i≠j} C_ij² + λ_d·Σ_i (C_ii − 1)², C the covariance of the encoder
means over the batch.

  python -m causal_disent.main --config=configs/dipvae1_dsprites_synth.py --workdir=W
  python -m causal_disent.evaluate --workdir=W

The study's settings (disentanglement_lib): λ_d = lambda_d_factor·λ_od with
lambda_d_factor = 10 for DIP-VAE-I, λ_od swept over 1, 2, 5, 10, 20 and 50; λ_od = 10
here.
"""

import ml_collections

from configs import betavae_dsprites_synth


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
    config = betavae_dsprites_synth.get_config(arg)
    objective = config.vae.objective = ml_collections.ConfigDict()
    objective.name = "dip_vae_i"  # a key of objectives/vae.LOSSES
    objective.lambda_od = 10.0  # off-diagonal weight
    objective.lambda_d_factor = 10.0  # diagonal weight = lambda_d_factor * lambda_od
    return config
