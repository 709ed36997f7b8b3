r"""Ada-ML-VAE (Locatello et al., "Weakly-Supervised Disentanglement Without
Compromises", ICML 2020, §3) on the procedural dSprites: configs/adagvae_dsprites_synth.py
with the shared latents averaged as ML-VAE averages a group, the product of the two
posteriors (objectives/weak_vae.py).

  python -m causal_disent.main --config=configs/adamlvae_dsprites_synth.py:small --workdir=W
"""

import ml_collections

from configs import adagvae_dsprites_synth, betavae_dsprites_synth


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
    return adagvae_dsprites_synth.weakly_supervised(
        betavae_dsprites_synth.get_config(arg), "ada_ml_vae", arg)
