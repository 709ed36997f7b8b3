r"""CausalVAE on Pendulum (Yang et al., CVPR 2021, Table 1: MIC 95.1 / TIC 81.6).

Run (the authors' sizes and schedule: Adam 1e-3, batch 64, 100 epochs):
  python -m causal_disent.main --config=configs/causalvae_pendulum.py --workdir=W
Run the variant sized for a 2-core CPU:
  python -m causal_disent.main --config=configs/causalvae_pendulum.py:small --workdir=W
The baselines of Table 1 on the same data and latent size:
  ... --config.causalvae.model.variant=condition_vae     (ConditionVAE: 93.8 / 80.5)
  ... --config.causalvae.model.variant=causalvae_unsup   (CausalVAE-unsup: 21.2 / 12.0)
Smoke test (tiny networks, a few steps; what the tests run):
  python -m causal_disent.main --config=configs/causalvae_pendulum.py:tiny --workdir=W

Measured on 2 cores, `:small` (3000 steps, 22.6 minutes): MIC 49.3 / TIC 33.9 and
SHD 5 to the true graph; far below the paper (A pre-trained on l_u alone comes out
acyclic but with wrong directions, and the label prior is weak against the pixel
likelihood). Work in progress.

Results (MIC, TIC, SHD of the thresholded learned A to the true graph, A itself,
reconstruction errors) go to W/results.json under "causalvae", the intervention
figure to W/figures/causalvae_interventions.png.
"""

import ml_collections


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
    config = base_config("pendulum")
    apply_variant(config, arg)
    return config


def base_config(dataset_name: str) -> ml_collections.ConfigDict:
    """The authors' setup on `dataset_name` (a dataset with concept labels)."""
    config = ml_collections.ConfigDict()
    config.seed = 0
    config.stages = ("causalvae",)

    config.data = ml_collections.ConfigDict()
    config.data.name = dataset_name
    config.data.data_dir = ""
    # Unused by Pendulum and Flow, whose published train/test split is used; kept
    # for datasets without one.
    config.data.split_seed = 0
    config.data.split_fractions = (0.8, 0.0, 0.2)

    cfg = config.causalvae = ml_collections.ConfigDict()
    model = cfg.model = ml_collections.ConfigDict()
    # "causalvae", "condition_vae" (ConditionVAE) or "causalvae_unsup" (CausalVAE-unsup)
    model.variant = "causalvae"
    model.num_concepts = 4  # n, one per label
    model.concept_dim = 4  # k; latent size n·k = 16 in every variant
    model.encoder_widths = (32, 32, 64, 64)  # stride-2 convs: 96 -> 6
    model.encoder_hidden = 256
    model.decoder_widths = (64, 64, 32, 32)  # 6x6x64 map, then 2x upsamplings
    model.decoder_hidden = 256
    model.mechanism_hidden = 32  # g_i: k -> 32 -> k (SPEC)

    objective = cfg.objective = ml_collections.ConfigDict()
    # Eq. 14 weights (paper: 1, 1); α is replaced by the augmented Lagrangian.
    objective.beta = 1.0  # l_u
    objective.gamma = 1.0  # l_m
    # Label prior also on the mask layer's output (the authors' code; 0 = Eq. 14 only).
    objective.mask_prior_weight = 1.0
    objective.dag_c = 1.0  # c of H(A)
    # Augmented Lagrangian λ·H + (ρ/2)·H² (NOTEARS / DAG-GNN schedule).
    objective.initial_penalty = 1.0  # ρ at the start (λ starts at 0)
    objective.lagrangian_update_every_steps = 500
    objective.progress_rate = 0.25  # grow ρ unless H fell below 0.25 of its last value
    objective.penalty_growth = 10.0
    objective.max_penalty = 1e8
    # No outer updates once H(A) is below this (float32 H bottoms out near 1e-7).
    objective.dag_tolerance = 1e-6
    # Pre-training of A alone on l_u by the augmented Lagrangian (paper §6, App. C.3);
    # labels only, full batch, seconds. 0 = none.
    objective.graph_pretrain_steps = 5000
    objective.graph_pretrain_update_every = 250
    objective.graph_pretrain_learning_rate = 1e-2

    optim = cfg.optim = ml_collections.ConfigDict()
    optim.learning_rate = 1e-3
    optim.batch_size = 64

    train = cfg.train = ml_collections.ConfigDict()
    train.num_epochs = 100
    train.num_steps = 0  # when > 0, overrides num_epochs
    train.log_every_steps = 100
    train.checkpoint_every_steps = 2000
    train.max_checkpoints_to_keep = 3
    train.prefetch_batches = 2
    # Render the training images once and keep them in memory (~200 MB for Pendulum).
    train.cache_images = True
    train.num_eval_images = 0  # test images scored at the end (0 = all)
    train.eval_batch_size = 128
    train.graph_threshold = 0.3  # |A[j, i]| above it is an edge j -> i
    train.figure_values = 7  # intervention values per concept in the figure
    return config


def apply_variant(config: ml_collections.ConfigDict, arg: str | None) -> None:
    variants = {"small": make_small, "tiny": make_tiny}
    if arg in variants:
        variants[arg](config)
    elif arg not in (None, ""):
        raise ValueError(
            f"unknown config variant {arg!r}; known: {', '.join(variants)} or none"
        )


def make_small(config: ml_collections.ConfigDict) -> None:
    """Narrower networks and a step budget for a 2-core CPU (see the docstring)."""
    model = config.causalvae.model
    model.encoder_widths = (16, 32, 32, 64)
    model.encoder_hidden = 128
    model.decoder_widths = (64, 32, 32, 16)
    model.decoder_hidden = 128
    config.causalvae.objective.lagrangian_update_every_steps = 250
    train = config.causalvae.train
    train.num_steps = 3000
    train.log_every_steps = 50
    train.checkpoint_every_steps = 500


def make_tiny(config: ml_collections.ConfigDict) -> None:
    """A few thousand parameters and four steps: checks the plumbing, learns nothing."""
    make_small(config)
    model = config.causalvae.model
    model.encoder_widths = (4, 4, 4, 4)
    model.encoder_hidden = 8
    model.decoder_widths = (4, 4, 4, 4)
    model.decoder_hidden = 8
    model.mechanism_hidden = 4
    config.causalvae.objective.lagrangian_update_every_steps = 2
    config.causalvae.objective.graph_pretrain_steps = 20
    config.causalvae.objective.graph_pretrain_update_every = 10
    config.causalvae.optim.batch_size = 8
    train = config.causalvae.train
    train.num_steps = 4
    train.log_every_steps = 2
    train.checkpoint_every_steps = 2
    train.cache_images = False
    train.num_eval_images = 24
    train.eval_batch_size = 8
    train.figure_values = 3
