"""Action retrieval for a model of single images (the VAE family, the weakly-supervised
VAEs among them): given a pair (X, Y) one action apart, which action turned X into Y
(CT-VAE's second task, Gendron et al., "Disentangling Causal Variables from Images
with a Causal-Transition VAE" IJCAI 2023, §4), read from how the pair's
representation changed.

A CT-VAE answers from its transition layer. A model without one answers through a
readout of the change from q(z | X) = N(μ_X, σ_X²) to q(z | Y), fitted on pairs of
the training split with their actions, as CT-VAE is trained on them:

  linear_probe    (the headline) multinomial logistic regression from the change of
                  the encoder mean, μ_Y − μ_X, standardised on the fitting pairs, to
                  the action (scikit-learn's lbfgs, C = 1);
  changed_latent  the latent the pair moved most, the largest δ_i = KL(q(z_i | X) ‖
                  q(z_i | Y)) (the latent the Ada-VAEs' adaptive threshold is surest
                  changed), with the sign of its mean's change: each (latent, sign)
                  predicts the action most fitting pairs with that latent and sign
                  had, an unseen one the commonest action. What the model itself
                  says changed, with nothing fitted but that vote.

Both are scored on the run's fixed set of test transitions, drawn as CT-VAE's stage 2
draws its own (`transitions.sampler_for(dataset, split, seed).fixed_set("test", n)`):
with the same data, split and seed, the very pairs a CT-VAE run is scored on. Scores
are `ct_evaluation.action_retrieval_scores`': action and factor accuracy, their
chance levels, per action and the confusion matrices.
"""

import warnings

import numpy as np

from causal_disent.data import transitions
from causal_disent.evaluation import model_calls
from causal_disent.evaluation.ct_evaluation import action_retrieval_scores
from causal_disent.objectives.vae_terms import gaussian_kl
from causal_disent.utils.images import images_to_unit_range
from causal_disent.utils.sharding import padded_global_batches

READOUTS = ("linear_probe", "changed_latent")
HEADLINE_READOUT = "linear_probe"


def check_retrieval_config(retrieval, dataset) -> None:
    """ValueError naming the field of `retrieval` (the section `vae.retrieval`) at
    fault, or the dataset when its images do not come in one-action pairs."""
    for name in ("num_test_pairs", "num_fitting_pairs"):
        if not (isinstance(retrieval[name], int) and retrieval[name] >= 1):
            raise ValueError(f"vae.retrieval.{name} must be a positive integer, got "
                             f"{retrieval[name]!r}")
    if not transitions.moves_along_grid(dataset):
        raise ValueError("vae.retrieval scores actions along a factor grid, and this "
                         "dataset's pairs are not drawn from one: remove vae.retrieval")


def encode_posteriors(model, params, dataset, index: np.ndarray,
                      batch_size: int) -> tuple[np.ndarray, np.ndarray]:
    """(mean, log variance) [n, d] of q(z | x) for the dataset's images at `index`,
    in padded batches of `batch_size` (one compiled program per model)."""
    means, log_variances = [], []
    batches = padded_global_batches(len(index), batch_size, None,
                                    lambda rows: {"images": dataset.images(index[rows])})
    for _, batch, keep in batches:
        mean, log_variance = model_calls.encoded_posteriors(
            model, params, images_to_unit_range(batch["images"]))
        means.append(np.asarray(mean, np.float64)[:keep])
        log_variances.append(np.asarray(log_variance, np.float64)[:keep])
    return np.concatenate(means), np.concatenate(log_variances)


def pair_changes(model, params, dataset, pairs: dict, batch_size: int) -> dict:
    """For each pair {"x_index", "y_index"}: "mean_change" μ_Y − μ_X and "distance"
    δ = KL(q(z | X) ‖ q(z | Y)) per latent, each [n, d]. Each distinct image is
    encoded once."""
    unique, inverse = np.unique(np.concatenate([pairs["x_index"], pairs["y_index"]]),
                                return_inverse=True)
    mean, log_variance = encode_posteriors(model, params, dataset, unique, batch_size)
    x_rows, y_rows = np.split(inverse, 2)
    distance = np.asarray(gaussian_kl(mean[x_rows], log_variance[x_rows],
                                      mean[y_rows], log_variance[y_rows]))
    return {"mean_change": mean[y_rows] - mean[x_rows], "distance": distance}


def fit_linear_probe(mean_change: np.ndarray, actions: np.ndarray, num_actions: int):
    """fn(mean_change [n, d]) -> probabilities [n, A] of a multinomial logistic
    regression fitted on `mean_change` [m, d] -> `actions` [m], the features
    standardised by the fitting set's mean and spread (a constant feature kept at 0).
    An action absent from the fitting set gets probability 0."""
    from sklearn import linear_model  # slow to import: only where a probe is fitted
    from sklearn.exceptions import ConvergenceWarning

    centre = mean_change.mean(axis=0)
    spread = mean_change.std(axis=0)
    spread = np.where(spread > 0, spread, 1.0)
    classes = np.unique(actions)
    if len(classes) == 1:
        only = np.zeros(num_actions)
        only[classes[0]] = 1.0
        return lambda features: np.tile(only, (len(features), 1))
    classifier = linear_model.LogisticRegression(max_iter=1000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        classifier.fit((mean_change - centre) / spread, actions)

    def probabilities(features: np.ndarray) -> np.ndarray:
        full = np.zeros((len(features), num_actions))
        full[:, classifier.classes_] = classifier.predict_proba((features - centre) / spread)
        return full

    return probabilities


def most_changed_latent_keys(changes: dict) -> np.ndarray:
    """Each pair's (latent, sign) key, 2·i + (μ_Y,i < μ_X,i) for its largest δ_i: [n]."""
    latent = np.argmax(changes["distance"], axis=1)
    fell = np.take_along_axis(changes["mean_change"], latent[:, None], axis=1)[:, 0] < 0
    return 2 * latent + fell


def fit_changed_latent_vote(changes: dict, actions: np.ndarray, num_actions: int):
    """fn(changes) -> one-hot probabilities [n, A]: the `changed_latent` readout of
    the module's docstring, its vote taken over the fitting pairs' `changes` and
    `actions`. Ties go to the lower action."""
    keys = most_changed_latent_keys(changes)
    num_keys = 2 * changes["distance"].shape[1]
    votes = np.zeros((num_keys, num_actions), np.int64)
    np.add.at(votes, (keys, actions), 1)
    commonest = np.bincount(actions, minlength=num_actions).argmax()
    choice = np.where(votes.sum(axis=1) > 0, votes.argmax(axis=1), commonest)

    def probabilities(new_changes: dict) -> np.ndarray:
        return np.eye(num_actions)[choice[most_changed_latent_keys(new_changes)]]

    return probabilities


def evaluate(model, params, dataset, split: dict, seed: int, *, num_test_pairs: int,
             num_fitting_pairs: int, batch_size: int) -> dict:
    """Both readouts fitted on `num_fitting_pairs` training transitions and scored on
    the run's `num_test_pairs` test transitions (the module's docstring): {"headline":
    the readout the headline is, "linear_probe": scores, "changed_latent": scores,
    "num_test_pairs", "num_fitting_pairs"}; a readout's scores are
    `action_retrieval_scores`'."""
    sampler = transitions.sampler_for(dataset, split, seed)
    fitting = sampler.fixed_set("train", num_fitting_pairs)
    test = sampler.fixed_set("test", num_test_pairs)
    fitting_changes = pair_changes(model, params, dataset, fitting, batch_size)
    test_changes = pair_changes(model, params, dataset, test, batch_size)
    num_actions = sampler.num_actions
    probe = fit_linear_probe(fitting_changes["mean_change"], fitting["action"], num_actions)
    vote = fit_changed_latent_vote(fitting_changes, fitting["action"], num_actions)
    return {
        "headline": HEADLINE_READOUT,
        "linear_probe": action_retrieval_scores(probe(test_changes["mean_change"]),
                                                test["action"]),
        "changed_latent": action_retrieval_scores(vote(test_changes), test["action"]),
        "num_test_pairs": int(num_test_pairs), "num_fitting_pairs": int(num_fitting_pairs),
    }
