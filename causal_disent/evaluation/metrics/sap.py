"""Separated attribute predictability (Kumar, Sattigeri & Balakrishnan, "Variational
inference of disentangled latent concepts from unlabeled observations", ICLR 2018),
for discrete factors, as disentanglement_lib."""

from __future__ import annotations

import warnings

import numpy as np

from causal_disent.data.base import FactorDataset
from causal_disent.evaluation.metrics.common import (
    DEFAULT_BATCH_SIZE,
    CardEntry,
    RepresentationFn,
    check_train_test,
    sample_train_and_test,
    train_test_parameters,
)

SAP_SVM_C = 0.01


def sap_score(train_codes: np.ndarray, train_factors: np.ndarray, test_codes: np.ndarray,
              test_factors: np.ndarray, svm_c: float = SAP_SVM_C) -> dict:
    """Separated attribute predictability.

    For every (dimension i, factor j): sklearn LinearSVC(C=0.01, class_weight="balanced")
    fitted on the single dimension i of the train set (other settings sklearn's
    defaults: squared hinge, L2, max_iter 1000; sklearn >= 1.5 picks the primal solver
    for n > features where disentanglement_lib's sklearn ran the dual; both solve the
    same problem, so scores agree up to solver tolerance),
    score[i, j] = its accuracy on the test set. SAP = mean over factors of the
    largest minus the second largest score over dimensions. Reference sizes: 10 000
    train, 5 000 test. A factor with one value in the train set cannot be fitted by
    an SVM; its scores are set to the test accuracy of predicting that value
    (disentanglement_lib would raise).

    Returns {"sap_score": float, "score_matrix": [D, F]}.
    """
    from sklearn import svm  # slow to import: see metrics/__init__.py
    from sklearn.exceptions import ConvergenceWarning
    train_codes, train_factors, test_codes, test_factors = check_train_test(
        train_codes, train_factors, test_codes, test_factors)
    num_dims, num_factors = train_codes.shape[1], train_factors.shape[1]
    score_matrix = np.zeros((num_dims, num_factors))
    for j in range(num_factors):
        values = np.unique(train_factors[:, j])
        for i in range(num_dims):
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
    second = ranked[1] if num_dims > 1 else np.zeros(num_factors)
    return {"sap_score": float(np.mean(ranked[0] - second)), "score_matrix": score_matrix}


def sap(dataset: FactorDataset, representation_fn: RepresentationFn, rng: np.random.Generator,
        num_train: int = 10_000, num_test: int = 5_000, batch_size: int = DEFAULT_BATCH_SIZE,
        svm_c: float = SAP_SVM_C) -> dict:
    """`sap_score` of i.i.d. train and test points of `dataset`."""
    train, test = sample_train_and_test(
        dataset, representation_fn, rng, num_train, num_test, batch_size)
    return sap_score(*train, *test, svm_c=svm_c)


CARD_ENTRY = CardEntry(
    "sap", sap, lambda n: {**train_test_parameters(n), "svm_c": SAP_SVM_C},
    headline=("sap_score",),
    sample_copies=9.0,  # 7.2 at 200 000 points, 3.2 of 32 codes
    notes={"classifier": "sklearn LinearSVC(C=svm_c, class_weight='balanced') per (code, "
                         "factor)"})
