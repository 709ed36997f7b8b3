r"""CT-VAE on Shapes3D: stage 1 (MCQ-VAE) then stage 2 (causal-transition layer).

Run (paper sizes, embedded procedural data, no download):
  python -m causal_disent.main --config=configs/ctvae_shapes3d.py --workdir=W
Run the variant sized for a 2-core CPU (stage 1 in under 10 minutes, test PSNR
above 24 dB on shapes3d_synth):
  python -m causal_disent.main --config=configs/ctvae_shapes3d.py:small --workdir=W
Smoke-test an installation in about a minute (tiny networks, a few steps; also what
the tests run):
  python -m causal_disent.main --config=configs/ctvae_shapes3d.py:tiny --workdir=W
Override any field:  --config.mcqvae.optim.learning_rate=1e-3

Each stage has its own section (`mcqvae`, later `ct`) holding model, objective,
optim and train settings, because the two stages train different networks with
different optimisers on different batches.
"""

import ml_collections


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
    config = ml_collections.ConfigDict()
    config.seed = 0
    config.stages = ("mcqvae",)

    config.data = ml_collections.ConfigDict()
    config.data.name = "shapes3d_synth"
    # Image-level split shared by every stage (a transition pair lives in one split).
    config.data.split_seed = 0
    config.data.split_fractions = (0.7, 0.15, 0.15)  # train, validation, test

    config.mcqvae = ml_collections.ConfigDict()
    model = config.mcqvae.model = ml_collections.ConfigDict()
    model.downsample_widths = (64, 128, 256)
    model.hidden_width = 256
    model.num_res_blocks = 6
    model.res_hidden = 256
    model.latent_dim = 128  # D
    model.num_codebooks = 4  # C; each codebook sees D/C channels
    model.num_codes = 64  # K
    model.commitment_cost = 0.25  # β

    optim = config.mcqvae.optim = ml_collections.ConfigDict()
    optim.learning_rate = 5e-4
    optim.decay_rate_per_epoch = 0.98
    optim.batch_size = 64  # global, over all devices and hosts

    train = config.mcqvae.train = ml_collections.ConfigDict()
    train.num_epochs = 20
    # When > 0, overrides num_epochs (the learning-rate decay still counts epochs).
    train.num_steps = 0
    train.log_every_steps = 100
    train.checkpoint_every_steps = 2000
    train.max_checkpoints_to_keep = 3
    train.prefetch_batches = 2
    # Test images evaluated at the end (0 = the whole test split).
    train.num_eval_images = 0
    train.eval_batch_size = 256

    variants = {"small": _make_small, "tiny": _make_tiny}
    if arg in variants:
        variants[arg](config)
    elif arg not in (None, ""):
        raise ValueError(
            f"unknown config variant {arg!r}; known: {', '.join(variants)} or none"
        )
    return config


def _make_small(config: ml_collections.ConfigDict) -> None:
    """Narrower MCQ-VAE and a step budget that fits a 2-core CPU."""
    model = config.mcqvae.model
    model.downsample_widths = (32, 64, 128)
    model.hidden_width = 128
    model.num_res_blocks = 2
    model.res_hidden = 64
    model.latent_dim = 64
    config.mcqvae.optim.learning_rate = 1e-3
    train = config.mcqvae.train
    train.num_steps = 3000
    train.log_every_steps = 50
    train.checkpoint_every_steps = 500
    train.num_eval_images = 4096


def _make_tiny(config: ml_collections.ConfigDict) -> None:
    """A few thousand parameters and six steps: checks the plumbing, learns nothing."""
    _make_small(config)
    model = config.mcqvae.model
    model.downsample_widths = (4, 8, 8)
    model.hidden_width = 8
    model.num_res_blocks = 1
    model.res_hidden = 4
    model.latent_dim = 8
    model.num_codebooks = 2
    model.num_codes = 8
    config.mcqvae.optim.batch_size = 8
    train = config.mcqvae.train
    train.num_steps = 6
    train.log_every_steps = 2
    train.checkpoint_every_steps = 3
    train.num_eval_images = 20
    train.eval_batch_size = 8
