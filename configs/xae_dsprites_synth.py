r"""The XAE on the procedural dSprites: configs/ae_dsprites_synth.py's autoencoder
with the explicit causal latent block between its latents and its decoder ("Interventional
consistency in autoencoders", ICLR 2021 submission, §2.2; models/xblock.py): the
encoder's 10 latents are the noise units N, the decoder reads the causal units
Z_i = f_i(M_i ⊙ Z_<i, N_i).

  python -m causal_disent.main --config=configs/xae_dsprites_synth.py:small --workdir=W
  ... --config.vae.consistency.invariance_weight=4     (XCAE-I)
  ... --config.vae.consistency.equivariance_weight=4   (XCAE-E)
"""

import ml_collections

from configs import ae_dsprites_synth


def with_xblock(config: ml_collections.ConfigDict, arg: str | None) -> ml_collections.ConfigDict:
    """`config` (a VAE-family config) with the XBlock section `vae.model.xblock`, as the
    paper's authors' code builds it (GiuliaLanzillotta/CausalAE, models/layers.py
    `VecSCM`, experiments/utils.py; models/xblock.py says what each field does)."""
    block = config.vae.model.xblock = ml_collections.ConfigDict()
    block.unit_size = 1  # dimensions per causal unit
    block.hidden = 4 if arg == "tiny" else 10  # each f_i: an MLP of this width ...
    block.num_hidden_layers = 2  # ... and depth,
    block.output_activation = True  # with Mish on its output too
    block.temperature = 1.0  # τ₀ of the Gumbel-sigmoid mask, annealed:
    block.temperature_schedule = "exponential"  # τ = max(τ₀·exp(−0.01·step), 0.01)
    block.temperature_decay = 0.01
    block.min_temperature = 0.01
    block.mask_noise = "gumbel"  # one Gumbel(0, 1) draw per gate
    block.mask_init = "normal"  # gate logits start standard normal
    # f_i as PyTorch's nn.Linear under the authors' standard_initialisation for Mish:
    # Xavier-normal weights, uniform biases in ±1/√fan-in, over each f_i's own inputs.
    block.weight_init = "glorot_normal"
    block.bias_init = "uniform_fan_in"
    # None: any predecessor may be a parent; else an n x n 0/1 matrix (j < i only).
    block.allowed_parents = None
    return config


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
    return with_xblock(ae_dsprites_synth.get_config(arg), arg)
