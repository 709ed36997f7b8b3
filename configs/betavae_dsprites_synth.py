r"""β-VAE (Higgins et al., "β-VAE: Learning Basic Visual Concepts with a Constrained
Variational Framework", ICLR 2017) on the procedural dSprites, in the setup of the
study of Locatello et al., "Challenging Common Assumptions in the Unsupervised
Learning of Disentangled Representations", ICML 2019 (its disentanglement_lib):
the convolutional encoder / decoder of models/vae.py (its code's kernel sizes and
Glorot-uniform initialisation), d = 10 latents, Bernoulli pixels, Adam (lr 1e-4,
b1 0.9, b2 0.999, eps 1e-8), batch 64, 300 000 steps.

  python -m causal_disent.main --config=configs/betavae_dsprites_synth.py --workdir=W
  python -m causal_disent.evaluate --workdir=W       (the metric card of the encoder mean)

β = 4 here, a typical setting: the study sweeps β over 1, 2, 4, 6, 8 and 16, and
β = 1 is the plain VAE (--config.vae.objective.beta=1).

The variant for a 2-core CPU (the paper's network, 2000 steps: about 10 minutes on 2
cores; its scores over three seeds are in docs/baselines.md):
  python -m causal_disent.main --config=configs/betavae_dsprites_synth.py:small --workdir=W
Smoke test (tiny networks, a few steps; what the tests run):
  python -m causal_disent.main --config=configs/betavae_dsprites_synth.py:tiny --workdir=W

Results (the test split's Bernoulli NLL, MSE and KL per latent) go to
W/results.json under "vae", test images and their reconstructions to
W/figures/vae_reconstructions.png.
"""

import ml_collections

from configs import _loop_settings, _variants


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
    config = ml_collections.ConfigDict()
    config.seed = 0
    # Models trained at once, seeds seed, seed + 1, ... (train/seed_stacking.py), each
    # written as its own run in WORKDIR/seeds/seed_<seed>; a multiple of the devices.
    config.num_seeds = 1
    # How the seeds run in the one step: "vmap" | "unroll" | "vmap_matmul"
    # (train/seed_stacking.EXECUTIONS; "auto": unroll on CPU, vmap elsewhere).
    config.seed_execution = "auto"
    config.stages = ("vae",)

    config.data = ml_collections.ConfigDict()
    config.data.name = "dsprites_synth"
    config.data.data_dir = ""  # procedural: unused
    # data.name=files: the file or folder of one's own dataset (docs/own_data.md).
    config.data.path = ""
    config.data.split_seed = 0
    # The study trains on every image; a held-out tenth scores the reconstructions.
    config.data.split_fractions = (0.9, 0.0, 0.1)  # train, validation, test

    cfg = config.vae = ml_collections.ConfigDict()
    model = cfg.model = ml_collections.ConfigDict()
    model.num_latents = 10  # d
    model.encoder_widths = (32, 32, 64, 64)  # stride-2 convs: 64 -> 4
    # Their kernel sides, disentanglement_lib's conv_encoder (methods/shared/
    # architectures.py): 4x4, 4x4, 2x2, 2x2. (4, 4, 4, 4), the appendix table's
    # reading, was this project's network before.
    model.encoder_kernel_sizes = (4, 4, 2, 2)
    model.encoder_hidden = 256
    model.decoder_widths = (64, 64, 32, 32)  # a 4x4x64 map, then 2x upsamplings
    model.decoder_hidden = 256
    # p(x | z) per pixel: "bernoulli" (the study's, on every dataset) or "gaussian"
    # (σ² = ½ around σ(logits): disentanglement_lib's l2 loss plus its constant).
    model.likelihood = "bernoulli"
    # Kernels start as TF1's layers start them in the study's code, Glorot uniform;
    # "lecun_normal" (Flax's default) was this project's before (models/vae.KERNEL_INITS).
    model.weight_init = "glorot_uniform"

    objective = cfg.objective = ml_collections.ConfigDict()
    objective.name = "beta_vae"  # a key of objectives/vae.LOSSES
    objective.beta = 4.0  # the loss's weights follow its name

    # Consistency training (objectives/consistency.py), off at weight 0; the paper's
    # "+ consistency" is 4 (invariance: XC-I, equivariance: XC-E).
    consistency = cfg.consistency = ml_collections.ConfigDict()
    consistency.invariance_weight = 0.0
    consistency.equivariance_weight = 0.0
    # Base samples: "hybrid" | "posterior" | "standard_normal"; intervention values:
    # "means" | "posterior_samples". The authors' XCVAE draws N(0, I) and intervenes
    # with posterior samples ("standard_normal", "posterior_samples"; a variational
    # loss only); docs/departures_baselines.md has their AE's choice and ours.
    consistency.prior = "hybrid"
    consistency.intervention_values = "means"
    # As the authors' code (GiuliaLanzillotta/CausalAE): each unit's error is its
    # unsquared L2 norm ("squared": this project's earlier choice), the equivariance
    # asks intervening and responding to commute ("self": the earlier pairing), and
    # the weights rise linearly from 0 over the first 10 000 steps.
    consistency.error = "l2"
    consistency.equivariance = "commute"
    consistency.warmup_steps = 10_000

    optim = cfg.optim = ml_collections.ConfigDict()
    optim.learning_rate = 1e-4  # constant
    optim.b1 = 0.9
    optim.b2 = 0.999
    optim.eps = 1e-8
    optim.batch_size = 64  # global, over all devices and hosts

    train = cfg.train = ml_collections.ConfigDict()
    train.num_steps = 300_000
    train.log_every_steps = 1000
    train.checkpoint_every_steps = 10_000
    _loop_settings.add_loop_settings(train)
    train.num_eval_images = 0  # test images scored at the end (0 = the whole split)
    train.eval_batch_size = 256
    # Learning curve (0 = none): every eval_every_steps, the test NLL, MSE and KL of
    # the first num_curve_images test images, into curves/vae.jsonl, metrics.jsonl
    # and TensorBoard (one model per run: num_seeds = 1).
    train.eval_every_steps = 10_000
    train.num_curve_images = 2048

    return _variants.apply_variant(config, arg, {"small": (SMALL,), "tiny": (SMALL, TINY)})


def on_shapes3d_synth(config: ml_collections.ConfigDict) -> ml_collections.ConfigDict:
    """`config` (a VAE-family config on dsprites_synth) with the procedural 3D Shapes as
    its data instead: 64x64 colour images, the same network with 3 output channels and
    the same Bernoulli pixels (disentanglement_lib's default on every dataset,
    colour included; its pixel values in [0, 1] are the targets). Gaussian pixels
    instead: --config.vae.model.likelihood=gaussian."""
    config.data.name = "shapes3d_synth"
    return config


# The paper's network and optimiser, a step budget for a 2-core CPU; the authors warm
# the consistency weights up over a tenth of their 100 000 steps.
SMALL = {
    "vae.train": dict(num_steps=2000, log_every_steps=100, checkpoint_every_steps=500,
                      num_eval_images=2048, eval_every_steps=500, num_curve_images=512),
    "vae.consistency": dict(warmup_steps=200),
}

# On top of SMALL: a few thousand parameters and four steps, a save at every interval
# (the tests stop runs between saves). Checks the plumbing, learns nothing.
TINY = {
    "vae.model": dict(num_latents=3, encoder_widths=(4, 4), encoder_kernel_sizes=(4, 2),
                      encoder_hidden=8, decoder_widths=(4, 4), decoder_hidden=8),
    "vae.optim": dict(batch_size=8),
    "vae.consistency": dict(warmup_steps=2),
    "vae.train": dict(num_steps=4, log_every_steps=2, checkpoint_every_steps=2,
                      min_seconds_between_checkpoints=0.0, num_eval_images=20,
                      eval_batch_size=8, eval_every_steps=2, num_curve_images=8),
}
