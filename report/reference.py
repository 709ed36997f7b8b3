"""Figures the project compares against but did not measure with its own code: the
papers' reported results, and timings of the authors' released code. Each names its
source; the report's tables print them beside the records' figures."""

# Gendron et al., "Disentanglement of Latent Representations via Causal
# Interventions" (IJCAI 2023), Table 1: CT-VAE's test action accuracy and factor
# accuracy after 100 epochs, by dataset (in the paper's column order), with its
# number of actions.
CT_VAE_TABLE1 = {
    "cars3d": {"actions": 6, "accuracy": (0.71, 0.94)},
    "shapes3d": {"actions": 12, "accuracy": (0.83, 0.90)},
    "sprites": {"actions": 18, "accuracy": (0.42, 0.82)},
    "dsprites": {"actions": 10, "accuracy": (0.44, 0.58)},
}
CT_VAE_ACCURACY = CT_VAE_TABLE1["shapes3d"]["accuracy"]

# Yang et al., "CausalVAE: Disentangled Representation Learning via Neural Structural
# Causal Models" (CVPR 2021), Table 1: MIC and TIC (%) by (dataset, model variant).
CAUSALVAE_TABLE1_MIC_TIC = {
    ("pendulum", "causalvae"): (95.1, 81.6),
    ("pendulum", "condition_vae"): (93.8, 80.5),
    ("flow", "causalvae"): (72.1, 56.4),
    ("flow", "condition_vae"): (75.5, 56.5),
}
CAUSALVAE_PENDULUM_MIC_TIC = CAUSALVAE_TABLE1_MIC_TIC["pendulum", "causalvae"]
