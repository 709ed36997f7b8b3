"""InfoM, InfoE and InfoC (Hsu et al., "Disentanglement via Latent Quantization",
NeurIPS 2023, §5): modularity, explicitness and compactness of a representation, read
from the normalised mutual information between each source (factor) and each latent.

  NMI[i, j] = I(s_i; z_j) / H(s_i)                       [F sources, D latents]
  InfoM = (mean over active latents j of max_i NMI / Σ_i NMI − 1/F) / (1 − 1/F)
  InfoC = (mean over sources i of max_j NMI / Σ_j NMI − 1/L) / (1 − 1/L)
  InfoE = mean over sources of (H_null(s_i) − H_model(s_i | z)) / H_null(s_i)

L is the number of active latents: those whose sample range is above a twentieth of
the widest range (continuous codes) or above 0 (discrete codes); InfoM and InfoC read
only their columns of NMI. 1 is ideal and 0 is the floor of InfoM and InfoC (each
latent's, or each source's, information spread evenly). H_model is the log loss, on
the points it was fitted to, of an unpenalised multinomial logistic regression from
all latents (standardised, or one-hot when discrete) to the source, with balanced
class weights; H_null is the same regression's from no input.

Mutual information: discrete codes are counted exactly (sklearn mutual_info_score,
nats); continuous codes are standardised and estimated by sklearn's k-nearest-
neighbour estimator (mutual_info_classif, k = 10), whose small jitter is seeded from
the metric's rng here, so that one rng fixes the result. Where the definition divides
by zero we keep a number: a latent that carries no information about any source
counts as spread evenly over them (its term is the floor), and with one source or one
active latent InfoM or InfoC is NaN (there is nothing to be modular or compact over).
"""

from __future__ import annotations

import warnings

import numpy as np

from causal_disent.data.base import FactorDataset
from causal_disent.evaluation.metrics.common import (
    DEFAULT_BATCH_SIZE,
    CardEntry,
    RepresentationFn,
    check_codes_factors,
    classifier_seed,
    sample_codes_and_factors,
)

NEIGHBOURS = 10
ACTIVE_RANGE_FRACTION = 1 / 20
# Codes are treated as discrete when every value is an integer and no dimension takes
# more than this many values (quantised latents, one-hot codes, ground-truth indices).
MAX_DISCRETE_VALUES = 256


def codes_are_discrete(codes: np.ndarray) -> bool:
    """Whether [n, D] codes are integer-valued with at most MAX_DISCRETE_VALUES values
    in every dimension."""
    codes = np.asarray(codes)
    if not np.all(np.equal(np.mod(codes, 1), 0)):
        return False
    return all(len(np.unique(column)) <= MAX_DISCRETE_VALUES for column in codes.T)


def active_latents(codes: np.ndarray, discrete: bool) -> np.ndarray:
    """[D] bool: the dimensions whose range is above 0 (discrete) or above a twentieth
    of the widest range (continuous)."""
    ranges = np.ptp(np.asarray(codes, np.float64), axis=0)
    if discrete:
        return ranges > 0
    return ranges > ranges.max(initial=0.0) * ACTIVE_RANGE_FRACTION


def normalized_mutual_info(codes: np.ndarray, factors: np.ndarray, discrete: bool,
                           rng: np.random.Generator) -> np.ndarray:
    """[F, D] I(s_i; z_j) / H(s_i) in nats; a constant source's row is 0."""
    from sklearn import feature_selection, metrics  # slow to import: metrics/__init__.py
    codes, factors = check_codes_factors(codes, factors)
    nmi = np.zeros((factors.shape[1], codes.shape[1]))
    if not discrete:
        spread = codes.std(axis=0)
        codes = (codes - codes.mean(axis=0)) / np.where(spread > 0, spread, 1.0)
    for i, source in enumerate(factors.T):
        entropy = metrics.mutual_info_score(source, source)
        if entropy == 0:
            continue
        if discrete:
            information = [metrics.mutual_info_score(source, column) for column in codes.T]
        else:
            information = feature_selection.mutual_info_classif(
                codes, source, discrete_features=False, n_neighbors=NEIGHBOURS,
                random_state=classifier_seed(rng))
        nmi[i] = np.asarray(information) / entropy
    return nmi


def infom_infoc(nmi: np.ndarray) -> tuple[float, float]:
    """(InfoM, InfoC) of an [F, L] NMI matrix over the active latents."""
    nmi = np.asarray(nmi, np.float64)
    num_sources, num_latents = nmi.shape
    return (_normalised_concentration(nmi, axis=0, spread_over=num_sources),
            _normalised_concentration(nmi, axis=1, spread_over=num_latents))


def _normalised_concentration(nmi: np.ndarray, axis: int, spread_over: int) -> float:
    """Mean of max / sum along `axis`, rescaled so that an even spread over
    `spread_over` entries is 0 and a single one is 1."""
    if spread_over < 2:
        return float("nan")
    totals, tops = nmi.sum(axis=axis), nmi.max(axis=axis)
    shares = np.where(totals > 0, tops / np.where(totals > 0, totals, 1.0), 1 / spread_over)
    return float((shares.mean() - 1 / spread_over) / (1 - 1 / spread_over))


def infoe(codes: np.ndarray, factors: np.ndarray, discrete: bool, seed: int) -> float:
    """Mean over sources of the share of the source's entropy (as a balanced logistic
    regression from no input measures it) that a regression from the codes removes."""
    from sklearn import exceptions, preprocessing
    codes, factors = check_codes_factors(codes, factors)
    if discrete:
        inputs = preprocessing.OneHotEncoder().fit_transform(codes)
    else:
        inputs = preprocessing.StandardScaler().fit_transform(codes)
    shares = []
    for source in factors.T:
        if len(np.unique(source)) < 2:
            continue  # nothing to predict
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", exceptions.ConvergenceWarning)
            fitted = _log_loss(inputs, source, seed)
            null = _log_loss(np.zeros((len(source), 1)), source, seed)
        shares.append((null - fitted) / null)
    return float(np.mean(shares)) if shares else float("nan")


def _log_loss(inputs, labels: np.ndarray, seed: int) -> float:
    """The log loss of the balanced, unpenalised regression on the points it fits."""
    from sklearn import linear_model, metrics
    model = linear_model.LogisticRegression(
        C=np.inf, class_weight="balanced", solver="lbfgs", max_iter=100,
        random_state=seed)
    model.fit(inputs, labels)
    return metrics.log_loss(labels, model.predict_proba(inputs), labels=model.classes_)


def infomec_scores(codes: np.ndarray, factors: np.ndarray, rng: np.random.Generator,
                   discrete: bool | None = None) -> dict:
    """InfoM, InfoE and InfoC of [n, D] codes against [n, F] factor indices.
    `discrete`: None decides by `codes_are_discrete`.

    Returns {"infom", "infoe", "infoc", "nmi" [F, D], "active_latents" [D] bool,
    "discrete_codes"}."""
    codes, factors = check_codes_factors(codes, factors)
    discrete = codes_are_discrete(codes) if discrete is None else discrete
    nmi = normalized_mutual_info(codes, factors, discrete, rng)
    active = active_latents(codes, discrete)
    infom, infoc = infom_infoc(nmi[:, active])
    return {"infom": infom, "infoe": infoe(codes, factors, discrete, classifier_seed(rng)),
            "infoc": infoc, "nmi": nmi, "active_latents": active,
            "discrete_codes": discrete}


def infomec(dataset: FactorDataset, representation_fn: RepresentationFn,
            rng: np.random.Generator, num_train: int = 10_000,
            batch_size: int = DEFAULT_BATCH_SIZE) -> dict:
    """`infomec_scores` of num_train i.i.d. points of `dataset`."""
    codes, factors = sample_codes_and_factors(dataset, representation_fn, rng, num_train,
                                              batch_size)
    return infomec_scores(codes, factors, rng)


def _parameters(num_samples: int) -> dict:
    return {"num_train": num_samples, "batch_size": DEFAULT_BATCH_SIZE}


CARD_ENTRY = CardEntry(
    "infomec", infomec, _parameters, headline=("infom", "infoe", "infoc"),
    # InfoE's regression to dSprites' 40 orientations holds most: 25.6 measured.
    sample_copies=32.0,
    notes={"mutual_information": f"continuous codes: standardised, sklearn "
                                 f"mutual_info_classif (k = {NEIGHBOURS}); discrete codes: "
                                 f"mutual_info_score; nats, divided by H(source)",
           "active_latents": "range > 1/20 of the widest (continuous), > 0 (discrete)",
           "discrete_codes": f"integer-valued, at most {MAX_DISCRETE_VALUES} values a "
                             f"dimension",
           "infoe": "unpenalised multinomial LogisticRegression (lbfgs, max_iter=100, "
                    "balanced classes) on the points it was fitted to, log loss against "
                    "the same regression from no input"})
