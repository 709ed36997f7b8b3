r"""Ada-GVAE (Locatello et al., "Weakly-Supervised Disentanglement Without Compromises",
ICML 2020, §3) on the procedural dSprites: a β-VAE of configs/betavae_dsprites_synth.py
(its network, optimiser, steps and β) trained on pairs of images that differ in a few
factors, averaging the posteriors of the latents its adaptive threshold finds shared
(objectives/weak_vae.py).

  python -m causal_disent.main --config=configs/adagvae_dsprites_synth.py:small --workdir=W
  python -m causal_disent.evaluate --workdir=W       (the metric card of the encoder mean)

The pairs (`vae.pairs`, data/weak_pairs.py) are CT-VAE's transitions, one factor moved
one step (k = 1), so that the model learns from the pairs CT-VAE learns from; the
study's k-factor pairs are --config.vae.pairs.source=resampled --config.vae.pairs.k=K
(K = -1: a random k per pair). The split is CT-VAE's (70 / 15 / 15 %), so the run's
action retrieval (`vae.retrieval`, evaluation/pair_retrieval.py) is scored on the test
pairs a CT-VAE run of the same seed is scored on; results.json has it under
vae.action_retrieval.

β = 4, the zoo's β-VAE's, so that the two differ by the pairs alone; the study sweeps
β over 1, 2, 4, 6, 8 and 16. `:small` takes 32 pairs a step, the 64 images of the
β-VAE's batch.
"""

import ml_collections

from configs import betavae_dsprites_synth


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
    return weakly_supervised(betavae_dsprites_synth.get_config(arg), "ada_gvae", arg)


def weakly_supervised(config: ml_collections.ConfigDict, loss: str,
                      arg: str | None) -> ml_collections.ConfigDict:
    """`config` (a β-VAE config, of variant `arg`) as the pair loss `loss` ("ada_gvae"
    or "ada_ml_vae") trains: its β, pairs of CT-VAE's transitions, CT-VAE's split and
    the action retrieval of its test pairs."""
    del config.vae.consistency  # the losses of pairs take no consistency penalties
    beta = config.vae.objective.beta
    config.vae.objective = ml_collections.ConfigDict({"name": loss, "beta": beta})
    # data/weak_pairs.SOURCES; k: the factors a pair changes (1 for transitions).
    config.vae.pairs = ml_collections.ConfigDict({"source": "transitions", "k": 1})
    if arg in ("small", "tiny"):  # pairs a step: the single-image batch's images
        config.vae.optim.batch_size //= 2
    return with_action_retrieval(config, arg)


def with_action_retrieval(config: ml_collections.ConfigDict,
                          arg: str | None) -> ml_collections.ConfigDict:
    """`config` (a VAE-family config, of variant `arg`) on CT-VAE's split, scoring
    action retrieval on CT-VAE's test pairs at the end (evaluation/pair_retrieval.py)."""
    config.data.split_fractions = (0.7, 0.15, 0.15)  # train, validation, test
    retrieval = config.vae.retrieval = ml_collections.ConfigDict()
    retrieval.num_test_pairs = 2000  # CT-VAE's ct.eval.num_test_pairs
    retrieval.num_fitting_pairs = 10_000  # training pairs its readouts are fitted on
    if arg == "tiny":
        retrieval.num_test_pairs, retrieval.num_fitting_pairs = 16, 64
    return config
