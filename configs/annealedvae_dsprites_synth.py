r"""AnnealedVAE (Burgess et al., "Understanding disentangling in β-VAE", 2018) on the
procedural dSprites, in the setup of configs/betavae_dsprites_synth.py (the study of
Locatello et al., ICML 2019: its network, optimiser, batch and 300 000 steps); only
the objective differs: reconstruction + γ·|KL − C|, the capacity C rising linearly
from 0 to c_max over the first `iteration_threshold` steps.

  python -m causal_disent.main --config=configs/annealedvae_dsprites_synth.py --workdir=W
  python -m causal_disent.evaluate --workdir=W

The study's settings (disentanglement_lib): γ = 1000 and iteration_threshold = 100 000
fixed, c_max swept over 5, 10, 25, 50, 75 and 100; c_max = 25 here. The threshold is
a third of the run's steps, as in the study (100 000 of 300 000), so that the `:small`
and `:tiny` variants (2000 and 4 steps) reach c_max as well; a run with another
--config.vae.train.num_steps keeps the threshold of its variant unless given
--config.vae.objective.iteration_threshold.
"""

import ml_collections

from configs import betavae_dsprites_synth


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
    config = betavae_dsprites_synth.get_config(arg)
    objective = config.vae.objective = ml_collections.ConfigDict()
    objective.name = "annealed_vae"  # a key of objectives/vae.LOSSES
    objective.gamma = 1000.0
    objective.c_max = 25.0  # nats
    objective.iteration_threshold = config.vae.train.num_steps // 3  # steps to reach c_max
    return config
