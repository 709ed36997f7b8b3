"""Evaluation metrics, one module each, and the table of those the metric card runs.

The disentanglement metrics of the study of Locatello et al., "Challenging common
assumptions in the unsupervised learning of disentangled representations" (ICML
2019, §4 "Considered metrics"), with disentanglement_lib's definitions and defaults
(each module says where we differ). Each module holds the pure score on fixed
arrays, the metric-specific sampling, the metric `name(dataset, representation_fn,
rng, ...)` that joins them, and its `CARD_ENTRY`; `common` holds what they share.

  mig                      MIG, 10 000 points
  sap                      SAP, 10 000 train / 5 000 test, discrete factors
  dci                      DCI (GBT importances), 10 000 train / 5 000 test
  betavae                  BetaVAE score, 10 000 train / 5 000 eval points of 64-pairs
  factorvae                FactorVAE score, 10 000 variance samples, 10 000 / 5 000 votes
  modularity_explicitness  Ridgeway & Mozer, 10 000 train / 5 000 test
  unsupervised             Gaussian total / Wasserstein correlation, mean pairwise MI
  infomec                  InfoM / InfoE / InfoC (Hsu et al., NeurIPS 2023), 10 000 points

`rng` is a numpy Generator; classifier seeds are drawn from it, so one rng fixes
the whole result. Not on the card: `mic` (MIC/TIC of concepts against labels) and
`graphs` (structural Hamming distance; acyclicity is `discovery.graphs.is_acyclic`),
the CausalVAE paper's scores; `mcc` (mean correlation coefficient against continuous
true sources, the iVAE paper's score on its synthetic data).

sklearn and scipy.stats are imported inside the functions that use them: importing
them takes one to two seconds, which every command line (which imports the stages,
and so this package) would otherwise spend before it even checks its flags.
"""

from causal_disent.evaluation.metrics import (
    betavae,
    dci,
    factorvae,
    infomec,
    mig,
    modularity_explicitness,
    sap,
    unsupervised,
)
from causal_disent.evaluation.metrics.common import CardEntry

# name -> entry, in card order.
METRICS: dict[str, CardEntry] = {
    module.CARD_ENTRY.name: module.CARD_ENTRY
    for module in (mig, sap, dci, betavae, factorvae, modularity_explicitness, unsupervised,
                   infomec)
}
