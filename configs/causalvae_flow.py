r"""CausalVAE on Flow (Yang et al., CVPR 2021, Table 1: MIC 72.1 / TIC 56.4).

Same model, objective and schedule as configs/causalvae_pendulum.py (see there for
the variants and baselines); only the dataset differs. Flow's label prior uses the
training split's per-label mean and standard deviation (the authors published
constants for Pendulum only).

  python -m causal_disent.main --config=configs/causalvae_flow.py:small --workdir=W
  ... --config.causalvae.model.variant=condition_vae     (ConditionVAE: 75.5 / 56.5)
  ... --config.causalvae.model.variant=causalvae_unsup   (CausalVAE-unsup: 22.8 / 12.4)

PC learns Flow's true equivalence class: the DAG it starts A at is water -> ball,
water -> flow <- hole (ball - water cannot be oriented from observational data), SHD
1 to the true DAG, in the true class. What the defaults reach (`:small`: MIC / TIC,
the learned graph, test BCE, minutes, seeds 0-2) is in docs/causalvae.md, rendered
from the run records in results/. Above the paper's figures: the label-prior weight
w = 100 (configs/causalvae_pendulum.py) ties the codes to the labels.
"""

import ml_collections

from configs import causalvae_pendulum


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
    config = causalvae_pendulum.base_config("flow")
    causalvae_pendulum.apply_variant(config, arg)
    return config
