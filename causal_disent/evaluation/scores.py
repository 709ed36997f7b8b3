"""Disentanglement scores (SPEC §5) on fixed arrays: no dataset, no model.

Every function here is pure numpy/sklearn on `codes` [n, D] float (the encoder
means) and `factors` [n, F] int (ground-truth factor indices), so the definitions
are testable on hand-made arrays. `causal_disent.evaluation.sampling` draws those
arrays from a `FactorDataset`; `causal_disent.evaluation.disentanglement` joins the two.

Definitions and defaults follow google-research/disentanglement_lib (Locatello et
al., ICML 2019), re-implemented here. Conventions shared by all scores:

* Arrays are sample-major ([n, D], [n, F]); disentanglement_lib is code-major
  ([D, n]). Matrices indexed by (code, factor) are [D, F] in both.
* Mutual information is in nats, computed by `sklearn.metrics.mutual_info_score`
  on discrete labels. Codes are discretised per code into 20 equal-width bins over
  that code's range in the sample: label = np.digitize(code, edges[:-1]) with
  edges = np.histogram(code, 20)[1], so labels are 1..20 and the maximum falls in
  bin 20. Factors are already discrete and are used as they are.
* H(factor) = mutual_info_score(factor, factor), the plug-in entropy in nats.

Where disentanglement_lib has a known quirk, the function's docstring says what we do.
"""

from __future__ import annotations

import os
import warnings

import joblib
import numpy as np
import scipy.linalg
import scipy.stats
from sklearn import ensemble, linear_model, svm
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import mutual_info_score, roc_auc_score

NUM_BINS = 20
SAP_SVM_C = 0.01
FACTORVAE_STD_THRESHOLD = 0.05
_ENTROPY_EPS = 1e-11  # disentanglement_lib adds it before normalising importances


# --------------------------------------------------------------------------- #
# Shared pieces
# --------------------------------------------------------------------------- #
def check_codes_factors(codes: np.ndarray, factors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Validated float64 [n, D] codes and int64 [n, F] factors with the same n."""
    codes = np.asarray(codes, np.float64)
    factors = np.asarray(factors)
    if codes.ndim != 2 or factors.ndim != 2:
        raise ValueError(
            "codes and factors must be 2-D [n, D] and [n, F], got "
            f"{codes.shape} and {factors.shape}"
        )
    if len(codes) != len(factors):
        raise ValueError(f"codes ({len(codes)} rows) and factors ({len(factors)} rows) differ in n")
    if len(codes) < 2:
        raise ValueError(f"need at least 2 samples, got {len(codes)}")
    if not np.all(np.isfinite(codes)):
        raise ValueError("codes hold NaN or inf")
    if factors.size and not np.issubdtype(factors.dtype, np.integer):
        raise ValueError(f"factors must hold integer indices, got dtype {factors.dtype}")
    return codes, factors.astype(np.int64)


def discretize_codes(codes: np.ndarray, num_bins: int = NUM_BINS) -> np.ndarray:
    """[n, D] float codes -> [n, D] int64 bin labels in 1..num_bins, per code.

    Equal-width bins over each code's own range (np.histogram edges), as
    disentanglement_lib's `histogram_discretize`. A constant code lands in one bin.
    """
    codes = np.asarray(codes, np.float64)
    if num_bins < 1:
        raise ValueError(f"num_bins must be >= 1, got {num_bins}")
    labels = np.empty(codes.shape, np.int64)
    for d in range(codes.shape[1]):
        edges = np.histogram(codes[:, d], num_bins)[1]
        labels[:, d] = np.digitize(codes[:, d], edges[:-1])
    return labels


def discrete_mutual_info(discrete_codes: np.ndarray, factors: np.ndarray) -> np.ndarray:
    """[D, F] mutual information (nats) between each discrete code and each factor."""
    num_codes, num_factors = discrete_codes.shape[1], factors.shape[1]
    mutual_info = np.zeros((num_codes, num_factors))
    for i in range(num_codes):
        for j in range(num_factors):
            mutual_info[i, j] = mutual_info_score(factors[:, j], discrete_codes[:, i])
    return mutual_info


def discrete_entropy(factors: np.ndarray) -> np.ndarray:
    """[F] plug-in entropy (nats) of each discrete factor column."""
    return np.array([mutual_info_score(column, column) for column in np.asarray(factors).T])


# --------------------------------------------------------------------------- #
# MIG (Chen et al., 2018)
# --------------------------------------------------------------------------- #
def mig_score(codes: np.ndarray, factors: np.ndarray, num_bins: int = NUM_BINS) -> dict:
    """Mutual information gap of [n, D] codes against [n, F] factors.

    For each factor: (largest − second largest MI over codes) / H(factor), then the
    mean over factors. Reference sample size: n = 10 000. A factor with more than
    20 values shares bins even in a perfect code, so its MIG is < 1 by definition
    (e.g. dSprites orientation, 40 values). With a single code the
    second largest MI is taken as 0 (disentanglement_lib would fail). A constant
    factor (H = 0) gives NaN for that factor, as in disentanglement_lib, and is
    excluded from the mean here (NaN if every factor is constant).

    Returns {"discrete_mig": float, "mig_per_factor": [F], "mutual_info": [D, F],
    "factor_entropy": [F]}.
    """
    codes, factors = check_codes_factors(codes, factors)
    mutual_info = discrete_mutual_info(discretize_codes(codes, num_bins), factors)
    entropy = discrete_entropy(factors)
    ranked = np.sort(mutual_info, axis=0)[::-1]
    second = ranked[1] if len(ranked) > 1 else np.zeros(factors.shape[1])
    with np.errstate(divide="ignore", invalid="ignore"):
        per_factor = np.where(entropy > 0, (ranked[0] - second) / entropy, np.nan)
    return {
        "discrete_mig": _nanmean(per_factor),
        "mig_per_factor": per_factor,
        "mutual_info": mutual_info,
        "factor_entropy": entropy,
    }


# --------------------------------------------------------------------------- #
# SAP (Kumar et al., 2018), discrete factors
# --------------------------------------------------------------------------- #
def sap_score(train_codes: np.ndarray, train_factors: np.ndarray, test_codes: np.ndarray,
              test_factors: np.ndarray, svm_c: float = SAP_SVM_C) -> dict:
    """Separated attribute predictability.

    For every (code i, factor j): sklearn LinearSVC(C=0.01, class_weight="balanced")
    fitted on the single code i of the train set (other settings sklearn's defaults:
    squared hinge, L2, max_iter 1000; sklearn >= 1.5 picks the primal solver for
    n > features where disentanglement_lib's sklearn ran the dual; both solve the
    same problem, so scores agree up to solver tolerance),
    score[i, j] = its accuracy on the test set. SAP = mean over factors of the
    largest minus the second largest score over codes. Reference sizes: 10 000 train,
    5 000 test. A factor with one value in the train set cannot be fitted by an SVM;
    its scores are set to the test accuracy of predicting that value (disentanglement_lib
    would raise).

    Returns {"sap_score": float, "score_matrix": [D, F]}.
    """
    train_codes, train_factors = check_codes_factors(train_codes, train_factors)
    test_codes, test_factors = check_codes_factors(test_codes, test_factors)
    _check_same_width(train_codes, test_codes, train_factors, test_factors)
    num_codes, num_factors = train_codes.shape[1], train_factors.shape[1]
    score_matrix = np.zeros((num_codes, num_factors))
    for j in range(num_factors):
        values = np.unique(train_factors[:, j])
        for i in range(num_codes):
            if len(values) < 2:
                score_matrix[i, j] = np.mean(test_factors[:, j] == values[0])
                continue
            classifier = svm.LinearSVC(C=svm_c, class_weight="balanced")
            with warnings.catch_warnings():
                # liblinear often stops at max_iter on one feature; disentanglement_lib
                # ran with the same defaults and the same warnings.
                warnings.simplefilter("ignore", ConvergenceWarning)
                classifier.fit(train_codes[:, i : i + 1], train_factors[:, j])
            predicted = classifier.predict(test_codes[:, i : i + 1])
            score_matrix[i, j] = np.mean(predicted == test_factors[:, j])
    ranked = np.sort(score_matrix, axis=0)[::-1]
    second = ranked[1] if num_codes > 1 else np.zeros(num_factors)
    return {"sap_score": float(np.mean(ranked[0] - second)), "score_matrix": score_matrix}


# --------------------------------------------------------------------------- #
# DCI (Eastwood & Williams, 2018)
# --------------------------------------------------------------------------- #
def gbt_importance_matrix(train_codes: np.ndarray, train_factors: np.ndarray,
                          test_codes: np.ndarray, test_factors: np.ndarray,
                          seed: int | None = 0,
                          num_workers: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """[D, F] importances of one GradientBoostingClassifier per factor.

    Classifier: sklearn's defaults (100 trees of depth 3, learning rate 0.1, log-loss)
    as disentanglement_lib; its random_state is unset there, we pass `seed` so the
    score is reproducible (the defaults use no subsampling, so the seed only breaks
    ties between equally good splits). The factors' classifiers are independent, so
    they are fitted in `num_workers` processes (default: one per CPU, at most one per
    factor); the result does not depend on it. Returns (importance [D, F] =
    |feature_importances_|, train accuracy [F], test accuracy [F]).
    """
    num_factors = train_factors.shape[1]
    if num_workers is None:
        num_workers = min(num_factors, os.cpu_count() or 1)
    per_factor = joblib.Parallel(n_jobs=max(1, num_workers))(
        joblib.delayed(_fit_factor_gbt)(train_codes, train_factors[:, j], test_codes,
                                        test_factors[:, j], seed)
        for j in range(num_factors)
    )
    importance = np.stack([p[0] for p in per_factor], axis=1) if per_factor else \
        np.zeros((train_codes.shape[1], 0))
    train_accuracy = np.array([p[1] for p in per_factor])
    test_accuracy = np.array([p[2] for p in per_factor])
    return importance, train_accuracy, test_accuracy


def _fit_factor_gbt(train_codes, train_factor, test_codes, test_factor, seed):
    """(importance [D], train accuracy, test accuracy) of one factor's classifier."""
    if len(np.unique(train_factor)) < 2:
        # Nothing to predict: no importance, and the constant guess.
        return (np.zeros(train_codes.shape[1]), 1.0,
                float(np.mean(test_factor == train_factor[0])))
    model = ensemble.GradientBoostingClassifier(random_state=seed)
    model.fit(train_codes, train_factor)
    return (np.abs(model.feature_importances_),
            float(np.mean(model.predict(train_codes) == train_factor)),
            float(np.mean(model.predict(test_codes) == test_factor)))


def dci_from_importance(importance: np.ndarray) -> dict:
    """Disentanglement and completeness of a [D, F] importance matrix R.

    disentanglement = Σ_i ρ_i (1 − H_F(R_i·)), ρ_i = Σ_j R_ij / Σ R;
    completeness = Σ_j ρ_j (1 − H_D(R_·j)), ρ_j = Σ_i R_ij / Σ R; entropies of the
    rows (columns) normalised to distributions, in base F (D), with 1e-11 added to
    every entry first, as disentanglement_lib. An all-zero R weights codes (factors)
    uniformly, as disentanglement_lib; F = 1 (D = 1) makes the entropy base 1, which
    disentanglement_lib turns into NaN; we define those per-code (per-factor) scores as 1.
    """
    importance = np.asarray(importance, np.float64)
    num_codes, num_factors = importance.shape
    weights = importance if importance.sum() > 0 else np.ones_like(importance)
    with np.errstate(divide="ignore", invalid="ignore"):
        per_code = (1.0 - scipy.stats.entropy(importance.T + _ENTROPY_EPS, base=num_factors)
                    if num_factors > 1 else np.ones(num_codes))
        per_factor = (1.0 - scipy.stats.entropy(importance + _ENTROPY_EPS, base=num_codes)
                      if num_codes > 1 else np.ones(num_factors))
    code_weight = weights.sum(axis=1) / weights.sum()
    factor_weight = weights.sum(axis=0) / weights.sum()
    return {
        "disentanglement": float(np.sum(per_code * code_weight)),
        "completeness": float(np.sum(per_factor * factor_weight)),
        "disentanglement_per_code": per_code,
        "completeness_per_factor": per_factor,
    }


def dci_scores(train_codes: np.ndarray, train_factors: np.ndarray, test_codes: np.ndarray,
               test_factors: np.ndarray, seed: int | None = 0) -> dict:
    """DCI with gradient-boosted trees. Reference sizes: 10 000 train, 5 000 test.

    Informativeness is the mean over factors of the classifiers' accuracy (train and
    test), as disentanglement_lib reports it ("informativeness_train/test").

    Returns {"disentanglement", "completeness", "informativeness_train",
    "informativeness_test", "importance_matrix": [D, F], per-code/per-factor arrays}.
    """
    train_codes, train_factors = check_codes_factors(train_codes, train_factors)
    test_codes, test_factors = check_codes_factors(test_codes, test_factors)
    _check_same_width(train_codes, test_codes, train_factors, test_factors)
    importance, train_accuracy, test_accuracy = gbt_importance_matrix(
        train_codes, train_factors, test_codes, test_factors, seed)
    scores = dci_from_importance(importance)
    scores.update(
        informativeness_train=float(np.mean(train_accuracy)),
        informativeness_test=float(np.mean(test_accuracy)),
        importance_matrix=importance,
    )
    return scores


# --------------------------------------------------------------------------- #
# BetaVAE score (Higgins et al., 2017)
# --------------------------------------------------------------------------- #
def betavae_classifier_score(train_features: np.ndarray, train_labels: np.ndarray,
                             eval_features: np.ndarray, eval_labels: np.ndarray,
                             seed: int | None = 0) -> dict:
    """Accuracy of a logistic regression predicting the fixed factor from features.

    train/eval_features: [P, D] mean |r(x1) − r(x2)| over a batch pair sharing one
    factor; labels: [P] the shared factor. Reference: 10 000 train / 5 000 eval points.
    Classifier: sklearn LogisticRegression with its defaults and random_state=seed,
    as disentanglement_lib (`LogisticRegression(random_state=...)`). Its defaults
    have changed since: disentanglement_lib ran on sklearn < 0.22 (liblinear,
    one-vs-rest); modern sklearn uses lbfgs multinomial (C = 1, max_iter = 100), which
    we use; ConvergenceWarnings at max_iter are silenced, the fit is used as it stands.

    Returns {"train_accuracy", "eval_accuracy"}.
    """
    train_features, train_labels = _check_features(train_features, train_labels, "train")
    eval_features, eval_labels = _check_features(eval_features, eval_labels, "eval")
    if len(np.unique(train_labels)) < 2:
        # One class only (a one-factor dataset): the classifier is that class.
        only = train_labels[0]
        return {"train_accuracy": 1.0, "eval_accuracy": float(np.mean(eval_labels == only))}
    model = linear_model.LogisticRegression(random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(train_features, train_labels)
    return {
        "train_accuracy": float(np.mean(model.predict(train_features) == train_labels)),
        "eval_accuracy": float(np.mean(model.predict(eval_features) == eval_labels)),
    }


# --------------------------------------------------------------------------- #
# FactorVAE score (Kim & Mnih, 2018)
# --------------------------------------------------------------------------- #
def active_dims(global_variances: np.ndarray,
                threshold: float = FACTORVAE_STD_THRESHOLD) -> np.ndarray:
    """[D] bool: codes whose global standard deviation is >= threshold (kept).

    disentanglement_lib's function default is 0 (nothing pruned); its study configs
    (and SPEC §5) set 0.05, which is our default.
    """
    return np.sqrt(np.asarray(global_variances, np.float64)) >= threshold


def factorvae_vote_score(train_votes: np.ndarray, eval_votes: np.ndarray) -> dict:
    """Majority-vote classifier accuracy from [F, D] vote counts.

    votes[k, d] counts batches with factor k fixed whose smallest normalised
    variance was at code d. The classifier maps code d to argmax_k votes[k, d]
    (ties and unvoted codes: the lowest factor index, np.argmax as disentanglement_lib);
    accuracy = votes it gets right / all votes.

    Returns {"train_accuracy", "eval_accuracy"}.
    """
    train_votes = np.asarray(train_votes, np.int64)
    eval_votes = np.asarray(eval_votes, np.int64)
    if train_votes.ndim != 2 or train_votes.shape != eval_votes.shape:
        raise ValueError(
            f"votes must be [F, D] and alike, got {train_votes.shape} and {eval_votes.shape}"
        )
    if train_votes.sum() == 0 or eval_votes.sum() == 0:
        raise ValueError("votes are empty: need at least one train and one eval vote")
    classifier = np.argmax(train_votes, axis=0)
    codes = np.arange(train_votes.shape[1])
    return {
        "train_accuracy": float(train_votes[classifier, codes].sum() / train_votes.sum()),
        "eval_accuracy": float(eval_votes[classifier, codes].sum() / eval_votes.sum()),
    }


def factorvae_argmin_codes(batch_codes: np.ndarray, global_variances: np.ndarray,
                           threshold: float = FACTORVAE_STD_THRESHOLD) -> np.ndarray:
    """[P, B, D] codes of P fixed-factor batches -> [P] voted code (original index).

    Per batch: local variance over its B samples (ddof 1) / global variance, argmin
    over the active codes. disentanglement_lib records the position among the active
    codes rather than the code index; the accuracy is the same, and we return the
    code index so the votes are readable.
    """
    keep = np.flatnonzero(active_dims(global_variances, threshold))
    if not len(keep):
        raise ValueError("no active code (every global std < threshold)")
    local = np.var(np.asarray(batch_codes, np.float64)[:, :, keep], axis=1, ddof=1)
    return keep[np.argmin(local / np.asarray(global_variances)[keep], axis=1)]


# --------------------------------------------------------------------------- #
# Modularity and explicitness (Ridgeway & Mozer, 2018)
# --------------------------------------------------------------------------- #
def modularity_from_mutual_info(mutual_info: np.ndarray) -> tuple[float, np.ndarray]:
    """Mean over codes of 1 − Σ_{j≠j*} MI_ij² / (MI_ij*² (F − 1)), j* the top factor.

    A code with no information (max MI = 0) scores 0, as disentanglement_lib (so a
    dead code lowers the mean). Returns (modularity, per-code [D]).
    """
    squared = np.square(np.asarray(mutual_info, np.float64))
    top = squared.max(axis=1)
    num_factors = squared.shape[1]
    with np.errstate(divide="ignore", invalid="ignore"):
        if num_factors > 1:
            per_code = 1.0 - (squared.sum(axis=1) - top) / (top * (num_factors - 1.0))
        else:
            per_code = np.ones(len(squared))
    per_code = np.where(top == 0, 0.0, per_code)
    return float(per_code.mean()), per_code


def explicitness_per_factor(train_codes: np.ndarray, train_factor: np.ndarray,
                            test_codes: np.ndarray, test_factor: np.ndarray,
                            seed: int | None = 0) -> tuple[float, float]:
    """(train, test) macro one-vs-rest ROC AUC of a logistic regression on all codes.

    LogisticRegression with sklearn's defaults (as disentanglement_lib; see
    `betavae_classifier_score` on how those changed). Quirk fixed: disentanglement_lib
    re-fits a MultiLabelBinarizer on the test labels, which misaligns the columns
    with predict_proba when the test set lacks a class; we binarise against the
    classifier's classes. Classes absent from a set (all-negative column, no AUC)
    are left out of that set's macro average.
    """
    values = np.unique(train_factor)
    if len(values) < 2:
        return 1.0, 1.0  # nothing to separate
    model = linear_model.LogisticRegression(random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(train_codes, train_factor)
    return (_macro_auc(train_factor, model.predict_proba(train_codes), model.classes_),
            _macro_auc(test_factor, model.predict_proba(test_codes), model.classes_))


def modularity_explicitness_scores(train_codes: np.ndarray, train_factors: np.ndarray,
                                   test_codes: np.ndarray, test_factors: np.ndarray,
                                   num_bins: int = NUM_BINS, seed: int | None = 0) -> dict:
    """Modularity (MI of discretised train codes) and explicitness (AUC).

    Reference sizes: 10 000 train, 5 000 test. Codes are standardised with the train
    mean and std (np.std, ddof 0) before the regression, as disentanglement_lib; a
    constant code (std 0, NaN there) is divided by 1 instead.

    Returns {"modularity_score", "explicitness_score_train", "explicitness_score_test",
    "mutual_info": [D, F], "modularity_per_code": [D], "explicitness_per_factor_test": [F]}.
    """
    train_codes, train_factors = check_codes_factors(train_codes, train_factors)
    test_codes, test_factors = check_codes_factors(test_codes, test_factors)
    _check_same_width(train_codes, test_codes, train_factors, test_factors)
    mutual_info = discrete_mutual_info(discretize_codes(train_codes, num_bins), train_factors)
    modularity, per_code = modularity_from_mutual_info(mutual_info)
    mean, std = train_codes.mean(axis=0), train_codes.std(axis=0)
    std = np.where(std > 0, std, 1.0)
    train_norm, test_norm = (train_codes - mean) / std, (test_codes - mean) / std
    explicit = np.array([
        explicitness_per_factor(train_norm, train_factors[:, j], test_norm, test_factors[:, j],
                                seed)
        for j in range(train_factors.shape[1])
    ])
    return {
        "modularity_score": modularity,
        "explicitness_score_train": float(explicit[:, 0].mean()),
        "explicitness_score_test": float(explicit[:, 1].mean()),
        "mutual_info": mutual_info,
        "modularity_per_code": per_code,
        "explicitness_per_factor_test": explicit[:, 1],
    }


# --------------------------------------------------------------------------- #
# Unsupervised: Gaussian total correlation of the codes
# --------------------------------------------------------------------------- #
def gaussian_total_correlation(covariance: np.ndarray) -> float:
    """Total correlation of N(0, Σ): ½ (Σ_i log Σ_ii − log det Σ), nats. 0 iff diagonal."""
    covariance = np.asarray(covariance, np.float64)
    return float(0.5 * (np.sum(np.log(np.diag(covariance))) - np.linalg.slogdet(covariance)[1]))


def gaussian_wasserstein_correlation(covariance: np.ndarray) -> float:
    """Squared 2-Wasserstein distance between N(0, Σ) and N(0, diag Σ)."""
    covariance = np.asarray(covariance, np.float64)
    root = scipy.linalg.sqrtm(covariance * np.diag(covariance)[:, None])
    return float(2.0 * np.trace(covariance) - 2.0 * np.trace(np.real(root)))


def unsupervised_scores(codes: np.ndarray, num_bins: int = NUM_BINS) -> dict:
    """disentanglement_lib's unsupervised metrics of [n, D] codes (reference n = 10 000).

    Covariance with np.cov (ddof 1). "mutual_info_score" is the mean pairwise MI
    (nats) between distinct discretised codes. A constant code makes the covariance
    singular and the total correlation inf/NaN, as in disentanglement_lib.
    """
    codes = np.asarray(codes, np.float64)
    if codes.ndim != 2 or len(codes) < 2:
        raise ValueError(f"codes must be [n, D] with n >= 2, got {codes.shape}")
    covariance = np.atleast_2d(np.cov(codes, rowvar=False))
    discrete = discretize_codes(codes, num_bins)
    pairwise = discrete_mutual_info(discrete, discrete)
    np.fill_diagonal(pairwise, 0.0)
    num_codes = codes.shape[1]
    with np.errstate(divide="ignore", invalid="ignore"):
        total_correlation = gaussian_total_correlation(covariance)
        wasserstein = gaussian_wasserstein_correlation(covariance)
    return {
        "gaussian_total_correlation": total_correlation,
        "gaussian_wasserstein_correlation": wasserstein,
        "gaussian_wasserstein_correlation_norm": wasserstein / float(np.trace(covariance)),
        "mutual_info_score": (float(pairwise.sum() / (num_codes**2 - num_codes))
                              if num_codes > 1 else 0.0),
    }


# --------------------------------------------------------------------------- #
# Helpers
# --------------------------------------------------------------------------- #
def _macro_auc(labels: np.ndarray, probabilities: np.ndarray, classes: np.ndarray) -> float:
    indicator = np.asarray(labels)[:, None] == classes[None, :]
    aucs = [roc_auc_score(indicator[:, c], probabilities[:, c])
            for c in range(len(classes)) if 0 < indicator[:, c].sum() < len(indicator)]
    return float(np.mean(aucs)) if aucs else float("nan")


def _nanmean(values: np.ndarray) -> float:
    finite = values[np.isfinite(values)]
    return float(finite.mean()) if len(finite) else float("nan")


def _check_same_width(train_codes, test_codes, train_factors, test_factors) -> None:
    if (train_codes.shape[1] != test_codes.shape[1]
            or train_factors.shape[1] != test_factors.shape[1]):
        raise ValueError(
            f"train ({train_codes.shape[1]} codes, {train_factors.shape[1]} factors) and test "
            f"({test_codes.shape[1]} codes, {test_factors.shape[1]} factors) differ in width"
        )


def _check_features(features, labels, what: str) -> tuple[np.ndarray, np.ndarray]:
    features, labels = np.asarray(features, np.float64), np.asarray(labels)
    if features.ndim != 2 or labels.shape != (len(features),) or not len(features):
        raise ValueError(
            f"{what} features must be [P, D] with labels [P], P > 0, got {features.shape} "
            f"and {labels.shape}"
        )
    return features, labels
