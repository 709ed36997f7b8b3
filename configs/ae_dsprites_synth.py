r"""The deterministic autoencoder (AE) on the procedural dSprites: the baseline of
"On the interventional consistency of autoencoders" (ICLR 2021 submission, §4.1) on the VAE
family's network (configs/betavae_dsprites_synth.py: encoder, decoder, Bernoulli
pixels, Adam 1e-4, batch 64, its variants). The loss is the reconstruction of the
encoder's mean ("ae"); there is no KL.

  python -m causal_disent.main --config=configs/ae_dsprites_synth.py:small --workdir=W
  ... --config.vae.consistency.invariance_weight=4     (+ consistency, XC-I)
  ... --config.vae.consistency.equivariance_weight=4   (+ consistency, XC-E)

W/results.json gets the INV / EQV / SCN scores under "vae" → "consistency", and
W/figures/vae_consistency.png their heat maps. The XAE is configs/xae_dsprites_synth.py.
"""

import ml_collections

from configs import betavae_dsprites_synth


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
    config = betavae_dsprites_synth.get_config(arg)
    config.vae.objective = ml_collections.ConfigDict({"name": "ae"})
    return config
