r"""The XVAE on the procedural dSprites: β-VAE (configs/betavae_dsprites_synth.py, β = 4)
with the explicit causal latent block after its latent sample ("Interventional
consistency in autoencoders", ICLR 2021 submission, §2.2; the block as in
configs/xae_dsprites_synth.py).

  python -m causal_disent.main --config=configs/xvae_dsprites_synth.py:small --workdir=W
  ... --config.vae.consistency.invariance_weight=4     (XCVAE-I)

Given a consistency weight, it trains as the authors' XCVAE (GiuliaLanzillotta/CausalAE,
models/CAE.py): base samples from the prior N(0, I), intervened with posterior samples
(docs/consistency_results.md compares it with encoder means on one seed).
"""

import ml_collections

from configs import betavae_dsprites_synth, xae_dsprites_synth


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
    config = xae_dsprites_synth.with_xblock(betavae_dsprites_synth.get_config(arg), arg)
    config.vae.consistency.prior = "standard_normal"
    config.vae.consistency.intervention_values = "posterior_samples"
    return config
