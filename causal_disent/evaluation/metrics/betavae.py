"""BetaVAE score (Higgins et al., "beta-VAE: Learning basic visual concepts with a
constrained variational framework", ICLR 2017), as disentanglement_lib; its pairs
of batches are drawn in bulk (see `common`)."""

from __future__ import annotations

import warnings

import numpy as np

from causal_disent.data.base import FactorDataset
from causal_disent.evaluation.metrics.common import (
    DEFAULT_BATCH_SIZE,
    IMAGES_PER_CHUNK,
    LOGISTIC_REGRESSION_NOTE,
    CardEntry,
    RepresentationFn,
    classifier_seed,
    representations_of,
    scored_factor_indices,
)


def betavae_features(dataset: FactorDataset, representation_fn: RepresentationFn,
                     rng: np.random.Generator, num_points: int,
                     batch_size: int = DEFAULT_BATCH_SIZE) -> tuple[np.ndarray, np.ndarray]:
    """BetaVAE score inputs: ([P, D] features, [P] labels).

    Per point: a factor k uniform; two batches of `batch_size` i.i.d. factor vectors
    where the second copies factor k from the first, row by row (so factor k is
    shared pairwise, not constant across the batch, as disentanglement_lib);
    feature = mean over the batch of |r(x1) − r(x2)|; label = k, the position of
    the factor among the scored ones (`scored_factor_indices`: a nuisance factor is
    never the shared one).
    """
    scored = scored_factor_indices(dataset)
    labels = rng.integers(0, len(scored), size=num_points)
    features = []
    points_per_chunk = max(1, IMAGES_PER_CHUNK // (2 * batch_size))
    for start in range(0, num_points, points_per_chunk):
        chunk = labels[start : start + points_per_chunk]
        count = len(chunk) * batch_size
        first = dataset.sample_factors(rng, count)
        second = dataset.sample_factors(rng, count)
        shared = scored[np.repeat(chunk, batch_size)]
        second[np.arange(count), shared] = first[np.arange(count), shared]
        codes = representations_of(dataset, representation_fn,
                                   np.concatenate([first, second]), batch_size)
        diff = np.abs(codes[:count] - codes[count:]).reshape(len(chunk), batch_size, -1)
        features.append(diff.mean(axis=1))
    return np.concatenate(features, axis=0), labels


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
    from sklearn import linear_model  # slow to import: see metrics/__init__.py
    from sklearn.exceptions import ConvergenceWarning
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


def _check_features(features, labels, what: str) -> tuple[np.ndarray, np.ndarray]:
    features, labels = np.asarray(features, np.float64), np.asarray(labels)
    if features.ndim != 2 or labels.shape != (len(features),) or not len(features):
        raise ValueError(
            f"{what} features must be [P, D] with labels [P], P > 0, got {features.shape} "
            f"and {labels.shape}"
        )
    return features, labels


def betavae(dataset: FactorDataset, representation_fn: RepresentationFn, rng: np.random.Generator,
            num_train: int = 10_000, num_eval: int = 5_000,
            batch_size: int = 64) -> dict:
    """`betavae_classifier_score` of train then eval `betavae_features`; the
    classifier's seed is drawn from `rng` after them."""
    train = betavae_features(dataset, representation_fn, rng, num_train, batch_size)
    evaluation = betavae_features(dataset, representation_fn, rng, num_eval, batch_size)
    return betavae_classifier_score(*train, *evaluation, seed=classifier_seed(rng))


CARD_ENTRY = CardEntry(
    "betavae", betavae, lambda n: {"num_train": n, "num_eval": n // 2, "batch_size": 64},
    headline=("eval_accuracy",), notes={"classifier": LOGISTIC_REGRESSION_NOTE},
    sample_copies=3.5,  # 2.8 at 100 000 points, 2.1 of 32 codes
    needs_full_grid=True)
