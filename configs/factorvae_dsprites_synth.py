r"""FactorVAE (Kim & Mnih, "Disentangling by Factorising", ICML 2018) on the procedural
dSprites, in the setup of configs/betavae_dsprites_synth.py (the study of Locatello
et al., ICML 2019: its network, optimiser and batch; 150 000 steps, which are the
study's 300 000 counted as it counts them, twice per step): the VAE loss +
γ·TC, the total correlation estimated by a discriminator on latent samples, trained
in the same step against samples with each latent permuted across the batch.

  python -m causal_disent.main --config=configs/factorvae_dsprites_synth.py --workdir=W
  python -m causal_disent.evaluate --workdir=W       (the metric card of the encoder mean)

The discriminator and its optimiser are disentanglement_lib's: an MLP of 6 hidden
layers of 1000 units (leaky ReLU, slope 0.2) and 2 logits, trained by Adam (lr 1e-4,
b1 0.5, b2 0.9, eps 1e-8). disentanglement_lib sets no default γ (each run of the
study names one); the study sweeps γ over 10, 20, 30, 40, 50 and 100 (recalled from
its table of hyperparameters, not checked against the text), and γ = 30, the middle
of that sweep, is taken here. The logged `loss` is the sum of the VAE's loss
(`vae_loss`) and the discriminator's (`discriminator_loss`): objectives/vae.py's
factor_vae_loss.
"""

import ml_collections

from configs import betavae_dsprites_synth


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
    config = betavae_dsprites_synth.get_config(arg)
    if arg in (None, ""):
        # A step here updates the VAE and the discriminator once each. disentanglement_lib
        # passes its global step to both optimisers (methods/unsupervised/vae.py,
        # FactorVAE.model_fn), so its 300 000 steps are 150 000 such iterations.
        config.vae.train.num_steps = 150_000
    objective = config.vae.objective = ml_collections.ConfigDict()
    objective.name = "factor_vae"  # a key of objectives/vae.LOSSES
    objective.gamma = 30.0  # the weight of the total correlation

    discriminator = config.vae.discriminator = ml_collections.ConfigDict()
    discriminator.model = ml_collections.ConfigDict()
    discriminator.model.num_hidden_layers = 6
    discriminator.model.hidden_units = 1000
    discriminator.model.weight_init = "glorot_uniform"  # tf.layers.dense's default
    optim = discriminator.optim = ml_collections.ConfigDict()
    optim.learning_rate = 1e-4  # constant
    optim.b1 = 0.5
    optim.b2 = 0.9
    optim.eps = 1e-8
    if arg == "tiny":  # a few hundred parameters, as the tiny VAE
        discriminator.model.num_hidden_layers = 2
        discriminator.model.hidden_units = 8
    return config
