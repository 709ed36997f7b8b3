r"""The Ladder VAE (Sønderby et al., "Ladder Variational Autoencoders", NeurIPS 2016) on
the procedural dSprites, in the setup of configs/betavae_dsprites_synth.py (the study
of Locatello et al., ICML 2019: its conv encoder / decoder, optimiser, batch and
300 000 steps): two stochastic layers whose posterior merges the bottom-up estimate
with the top-down prior by precision (ibid. §2.2), the KL term warmed up (§2.3);
models/ladder_vae.py and objectives/ladder_vae.py.

  python -m causal_disent.main --config=configs/laddervae_dsprites_synth.py --workdir=W
  python -m causal_disent.evaluate --workdir=W   (the card of the posterior means, both layers)

latent_sizes (6, 4): 10 latents in all, the study's d, so that the metric card
compares like with like; the sizes shrink upwards as in the paper's ladders (64, 32,
16, 8, 4 on MNIST), the bottom layer, which alone feeds the decoder, the larger.
ladder_hidden (256, 128): the first the study's hidden width, halved per layer as the
paper's deterministic layers are. β = 1 (the ELBO once warmed up). The KL weight rises
linearly over the first tenth of the run: the paper warms up over 200 of its 2000
epochs (recalled, not checked against the text): 30 000 of 300 000 steps, and a tenth
of any variant's steps. The test split's `test_kl` of results.json is each layer's KL
to N(0, I), not the model's KL to its top-down prior; the training log's
`kl_per_layer` is the latter.

Variants: `:small` (the network above, 2000 steps for a 2-core CPU, warm-up over
200) and `:tiny` (tiny networks, a few steps; what the tests run). As in
configs/annealedvae_dsprites_synth.py, a run with another --config.vae.train.num_steps
keeps its variant's warm-up unless given --config.vae.objective.warmup_steps.
Neither layer collapses at `:small` (docs/earlier_measurements.md).
"""

import ml_collections

from configs import betavae_dsprites_synth


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
    config = betavae_dsprites_synth.get_config(arg)
    conv = config.vae.model
    model = config.vae.model = ml_collections.ConfigDict()
    model.latent_sizes = (6, 4)  # n_1 (bottom, decoded) ... n_L
    model.ladder_hidden = (256, 128)  # one width per layer
    for name in ("encoder_widths", "encoder_kernel_sizes", "encoder_hidden",
                 "decoder_widths", "decoder_hidden", "likelihood", "weight_init"):
        model[name] = conv[name]  # the study's network (the variant's sizes)
    if arg == "tiny":
        model.latent_sizes = (2, 1)
        model.ladder_hidden = (8, 4)

    objective = config.vae.objective = ml_collections.ConfigDict()
    objective.name = "ladder_vae"  # a key of objectives/vae.LOSSES
    objective.beta = 1.0
    objective.warmup_steps = config.vae.train.num_steps // 10  # KL weight 0 -> 1
    if arg == "tiny":  # half of its 4 steps, so that the tests see the weight rise
        objective.warmup_steps = 2
    return config
