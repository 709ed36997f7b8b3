r"""Identifiability of the iVAE on its own synthetic nonlinear-ICA data (Khemakhem,
Kingma, Monti & Hyvärinen, "Variational Autoencoders and Nonlinear ICA: A Unifying
Framework", AISTATS 2020, §6): sources modulated by an observed segment u, mixed by a
random invertible MLP (data/nonlinear_ica.py); the iVAE (encoder q(z | x, u), prior
p(z | u)) and the plain VAE on the same network (encoder q(z | x), prior N(0, I))
(models/ivae.VectorIVAE, objectives/ivae.vector_ivae_loss) are trained on x, and
their encoder means are scored against the true sources by the mean correlation
coefficient (evaluation/metrics/mcc.py), and so is one draw of q(z | x, u) a point
(`mcc_of_samples`: what the iVAE authors' runner scores). The paper finds the iVAE's
MCC well above the VAE's: the sources are identifiable from (x, u), not from x alone.

  python benchmarks/ivae_identifiability.py [--seeds=3] [--num_layers=3] [--steps=20000] ...
      [--record=results/NAME.json]

Each seed draws its own data (sources, segments' variances, mixing) and trains both
models from the same seed. Prints one row per model: MCC mean ± standard deviation
over seeds (min..max) and the mean training time (compilation included), a row
"rotation", the true sources under a Haar-random rotation (what identifying the
sources only up to a rotation scores by chance), then the figures as JSON.

Measured (2-core CPU shared with other jobs; 2.9 min in all), the defaults: d = 5
Gaussian sources, M = 40 segments of 1000 points, std U[0.5, 3] per segment and
source, L = 3 orthogonal mixing layers with leaky ReLU (slope 0.2); MLPs of 3 x 50
(leaky ReLU 0.1), the iVAE authors' prior N(0, diag λ(u)) with log λ by three linear
layers, decoder variance 0.003, β = 1, Adam 3e-3, batch 256, 20 000 steps, seeds
0, 1, 2 (record results/ivae_identifiability_zero_mean_prior.json):

  model      MCC mean ± std      min..max  train s
  ivae         0.871 ± 0.029  0.845..0.911     35.0
  vae          0.745 ± 0.069  0.656..0.823     22.2
  rotation     0.694 ± 0.053  0.619..0.735      0.0

The iVAE beats the VAE on every seed (0.911/0.845/0.857 against 0.823/0.656/0.756);
the VAE is little above a random rotation. The earlier prior, a learned mean μ(u)
from one hidden layer (--prior_mean=learned --prior_hidden_layers=1; record
results/ivae_identifiability.json), gives the iVAE 0.885 ± 0.024 (0.916/0.881/0.858).
Other settings, same seeds, with that earlier prior (flag: iVAE MCC, VAE MCC, mean
± std over the three seeds; measured when the prior network's layers had other
names, hence other initial draws: the iVAE's default row then read 0.874 ± 0.030):

  --num_layers=1 (linear ICA)                  0.999 ± 0.002   0.709 ± 0.089
  --num_layers=2                               0.890 ± 0.091   0.691 ± 0.042
  --distribution=laplace                       0.734 ± 0.074   0.679 ± 0.032
  --matrices=lower_quartile --num_layers=1     0.795 ± 0.020   0.681 ± 0.030
  --matrices=lower_quartile                    0.609 ± 0.023   0.601 ± 0.062
  --decoder_variance=0.01                      0.809 ± 0.096   0.673 ± 0.128
  --decoder_variance=0.001                     0.864 ± 0.011   0.751 ± 0.072
  --decoder_variance=0.001 --steps=40000       0.868 ± 0.028   0.752 ± 0.062

The iVAE authors' cleanIVAE network (--num_hidden_layers=2 --activation=xtanh
--encoder_heads=separate --dense_init=torch), the default (zero-mean) prior, seeds
0-2: at their --decoder_variance=0.1 iVAE 0.714 ± 0.065, VAE 0.607 ± 0.052 (record
results/ivae_identifiability_authors_network.json); at 0.003 iVAE 0.860 ± 0.018,
VAE 0.725 ± 0.060 (..._authors_network_variance_0003.json): the network matters
little, the decoder variance much.

The authors' data and training (ilkhem/iVAE's generate_data and configs/ivae.yaml):
--matrices=uniform_lower_quartile --mixing_activation=xtanh --mixing_slope=0.1
--repeat_matrix=true for the data; --hidden=100 --num_hidden_layers=2
--activation=xtanh --encoder_heads=separate --dense_init=torch --decoder_variance=0.1
--loss_weights=100,1,0,10 --learning_rate=0.01 --batch_size=64 --epochs=20
--plateau_factor=0.1 for the rest. Seeds 0-2, iVAE / VAE MCC (records
results/ivae_identifiability_authors_{training,data,setup}.json):

  our data, their training        0.886 ± 0.038   0.634 ± 0.039
  their data, our training        0.665 ± 0.081   0.599 ± 0.037
  their data, their training      0.744 ± 0.083   0.638 ± 0.016
  ... with --matrices=orthogonal   0.943 ± 0.001   0.710 ± 0.063

Their matrices are what makes their data hard (..._authors_setup_orthogonal.json;
three matrices instead of one repeated, or a leaky ReLU for xtanh, score 0.577 and
0.610: ..._three_matrices.json, ..._leaky_relu.json).

One posterior draw a point, as the authors score (`mcc_of_samples`), scores
0.002-0.031 below the means for both models (records ..._sampled.json of our
setup, theirs and theirs with orthogonal matrices; the means' scores unchanged bit
for bit): iVAE / VAE 0.857 / 0.731, 0.738 / 0.607, 0.939 / 0.708.

What we found getting there (each point measured with this script or its pieces;
"one draw" is data of the same kind from another seed):
  * Mixing matrices. With Gaussian matrices of unit-norm columns kept below the
    lower quartile of condition numbers (--matrices=lower_quartile) and x
    standardised, the first runs gave iVAE 0.62 against VAE 0.54 (L = 3, one seed),
    and even linear mixing stalled at MCC 0.79-0.91 (seeds 0-2). The cause is the
    diagonal Gaussian posterior: for linear mixing the ELBO at the true sources falls
    short of log p(x | u) by `linear_mean_field_gap`, 1.0-1.5 nats per point for
    these matrices (printed with --num_layers=1), more than the mixed solutions the
    iVAE found lose (seed 0, standardised x, decoder variance 0.01: loss 5.3-5.5 at
    MCC 0.80, where the truth's −log p(x | u) is 4.81 and its ELBO at best 4.81 +
    1.27 = 6.08). Orthogonal matrices make that gap 0 for linear mixing, and the iVAE
    then finds the sources (MCC 0.999). With leaky ReLUs the Jacobian of f is not
    orthogonal even so, and the iVAE's MCC falls with L. Standardising x would
    rescale the axes of orthogonal mixing, so x is used as drawn.
  * Decoder variance. Small is stiff: at 0.001 seed 1 of linear mixing stalled at
    MCC 0.76 with loss 12.7 against the truth's 9.48, where 0.003 reaches 0.996;
    large blurs (0.1: MCC 0.59 at L = 3, one draw). 0.003 is the best of the values
    tried. A learnt variance (linear, lower-quartile mixing) stayed large, ≈ 0.13,
    with two latents collapsed.
  * Optimiser. 40 000 steps (+0.004 at decoder variance 0.001) and a cosine decay of
    the learning rate (linear, lower-quartile: 0.797 against 0.800) changed little;
    Adam 1e-3 did worse (seed 1, linear, variance 0.001: 0.68 against 0.76), as did
    batch 64 with lr 1e-3 (0.855 against 0.882 at L = 3, one draw).
  * Laplace sources make the iVAE's Gaussian prior misspecified: a smaller gap, and
    on seed 1 the VAE is ahead (0.667 against 0.630).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

# Runs from a checkout without installing the package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402

from causal_disent import cli  # noqa: E402
from causal_disent.data import nonlinear_ica  # noqa: E402
from causal_disent.evaluation.metrics.mcc import mean_correlation_coefficient  # noqa: E402
from causal_disent.models.ivae import VectorIVAE  # noqa: E402
from causal_disent.utils import arguments  # noqa: E402
from causal_disent.objectives.ivae import (  # noqa: E402
    vector_ivae_loss,
    vector_ivae_weighted_loss,
)
from causal_disent.runs import records  # noqa: E402

MODELS = {"ivae": True, "vae": False}  # name -> conditional
# The table's rows: the two models, then the true sources under a Haar-random rotation,
# what a method that identifies the sources only up to rotation scores by chance.
ROWS = (*MODELS, "rotation")
# data/nonlinear_ica's argument -> this script's flag, where they differ.
DATA_FLAGS = {"slope": "mixing_slope", "activation": "mixing_activation"}


@dataclasses.dataclass(frozen=True)
class Settings:
    """The experiment's sizes. Data: d sources, M segments, L mixing layers. Models:
    MLPs of `num_hidden_layers` x `hidden`, d latents, decoder variance; Adam."""

    num_sources: int = 5
    num_segments: int = 40
    points_per_segment: int = 1000
    num_layers: int = 3
    distribution: str = "gaussian"
    mean_range: float = 0.0
    matrices: str = "orthogonal"
    # The authors' data: uniform_lower_quartile, xtanh, 0.1, repeat_matrix=True.
    mixing_activation: str = "leaky_relu"
    mixing_slope: float = 0.2
    repeat_matrix: bool = False
    hidden: int = 50
    num_hidden_layers: int = 3
    prior_mean: str = "zero"  # the iVAE authors' N(0, diag λ(u)); "learned": N(μ(u), ·)
    prior_hidden_layers: int = 2  # log λ(u) by three linear layers (1 with "learned")
    decoder_variance: float = 0.003
    # The network's remaining choices (models/ivae.VectorIVAE); the authors' cleanIVAE
    # is xtanh, separate, torch (with num_hidden_layers=2, decoder_variance=0.1).
    activation: str = "leaky_relu"
    encoder_heads: str = "shared"
    dense_init: str = "flax"
    # "": the ELBO (reconstruction + analytic KL); "a,b,c,d": the authors' weighted
    # objective (objectives/ivae.vector_ivae_weighted_loss; theirs is 100,1,0,10).
    loss_weights: str = ""
    learning_rate: float = 3e-3
    batch_size: int = 256
    steps: int = 20_000
    steps_per_call: int = 500  # steps of one jitted scan
    # > 0: that many epochs of shuffled batches without replacement (the last partial
    # batch dropped), as the authors' DataLoader, instead of `steps` drawn with
    # replacement; with plateau_factor > 0 the learning rate is multiplied by it after
    # every epoch whose mean loss did not improve (PyTorch's ReduceLROnPlateau with
    # patience 0, the authors' schedule: 20 epochs, 0.1).
    epochs: int = 0
    plateau_factor: float = 0.0


def make_data(seed: int, settings: Settings) -> nonlinear_ica.NonlinearICAData:
    return nonlinear_ica.make_nonlinear_ica(
        seed, num_sources=settings.num_sources, num_segments=settings.num_segments,
        points_per_segment=settings.points_per_segment, num_layers=settings.num_layers,
        distribution=settings.distribution, mean_range=settings.mean_range,
        matrices=settings.matrices, activation=settings.mixing_activation,
        slope=settings.mixing_slope, repeat_matrix=settings.repeat_matrix)


def make_model(conditional: bool, num_sources: int, num_segments: int,
               settings: Settings) -> VectorIVAE:
    return VectorIVAE(data_dim=num_sources, num_latents=num_sources,
                      auxiliary_size=num_segments, hidden=settings.hidden,
                      num_hidden_layers=settings.num_hidden_layers,
                      decoder_variance=settings.decoder_variance, conditional=conditional,
                      prior_mean=settings.prior_mean,
                      prior_hidden_layers=settings.prior_hidden_layers,
                      activation=settings.activation, encoder_heads=settings.encoder_heads,
                      dense_init=settings.dense_init)


def loss_weights(settings: Settings) -> tuple[float, float, float, float] | None:
    """The four weights of `settings.loss_weights`, or None for the ELBO; ValueError
    when it is not four numbers."""
    if not settings.loss_weights:
        return None
    try:
        weights = tuple(float(weight) for weight in settings.loss_weights.split(","))
    except ValueError:
        weights = ()
    if len(weights) != 4:
        raise ValueError(f"loss_weights must be four numbers a,b,c,d (the authors': "
                         f"100,1,0,10), got {settings.loss_weights!r}")
    return weights


class PlateauSchedule:
    """PyTorch's ReduceLROnPlateau at its defaults but `factor` and patience 0 (mode
    "min", relative threshold 1e-4, no cooldown): after an epoch whose loss is not
    below best·(1 − 1e-4), the learning rate is multiplied by `factor`."""

    def __init__(self, learning_rate: float, factor: float):
        self.learning_rate, self.factor, self.best = learning_rate, factor, float("inf")

    def step(self, loss: float) -> float:
        """The learning rate for the next epoch, after one whose mean loss was `loss`."""
        if loss < self.best * (1.0 - 1e-4):
            self.best = loss
        elif self.learning_rate * (1.0 - self.factor) > 1e-8:
            self.learning_rate *= self.factor
        return self.learning_rate


def train(model: VectorIVAE, x: np.ndarray, u: np.ndarray, seed: int,
          settings: Settings) -> tuple[dict, float, float, list[float]]:
    """Adam on `vector_ivae_loss` (β = 1), or the authors' weighted objective, over
    minibatches drawn uniformly with replacement (`settings.steps` steps in jitted
    scans) or in shuffled epochs (`settings.epochs`, one jitted scan each). Returns
    (params, the last scan's mean loss, seconds including compilation, the learning
    rate of each epoch)."""
    start = time.perf_counter()
    init_rng, train_rng = jax.random.split(jax.random.key(seed))
    x, u = jnp.asarray(x), jnp.asarray(u)
    params = model.init(init_rng, x[:1], u[:1])["params"]
    # A learning rate in the optimiser's state only where it changes: held there it
    # rounds differently, and the constant one keeps the earlier records' numbers.
    tx = (optax.inject_hyperparams(optax.adam)(learning_rate=settings.learning_rate)
          if settings.plateau_factor else optax.adam(settings.learning_rate))
    opt_state = tx.init(params)
    weights = loss_weights(settings)

    def loss_fn(params, batch, rng):
        if weights is None:
            return vector_ivae_loss(params, batch, rng, model=model, beta=1.0)
        return vector_ivae_weighted_loss(params, batch, rng, model=model, weights=weights,
                                         dataset_size=len(x))

    def one_step(carry, step_inputs):
        params, opt_state = carry
        index, rng = step_inputs
        batch = {"x": x[index], "auxiliary": u[index]}
        (loss, _), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, batch, rng)
        updates, opt_state = tx.update(grads, opt_state)
        return (optax.apply_updates(params, updates), opt_state), loss

    @jax.jit
    def scan_steps(params, opt_state, indices, rngs):
        (params, opt_state), losses = jax.lax.scan(one_step, (params, opt_state),
                                                   (indices, rngs))
        return params, opt_state, jnp.mean(losses)

    loss, learning_rates = jnp.nan, []
    if settings.epochs:
        schedule = PlateauSchedule(settings.learning_rate, settings.plateau_factor)
        batches = len(x) // settings.batch_size
        for epoch in range(settings.epochs):
            learning_rates.append(schedule.learning_rate)
            order_rng, step_rng = jax.random.split(jax.random.fold_in(train_rng, epoch))
            indices = jax.random.permutation(order_rng, len(x))[:batches * settings.batch_size]
            params, opt_state, loss = scan_steps(
                params, opt_state, indices.reshape(batches, settings.batch_size),
                jax.random.split(step_rng, batches))
            if settings.plateau_factor:
                opt_state.hyperparams["learning_rate"] = jnp.asarray(
                    schedule.step(float(loss)), jnp.float32)
        return params, float(loss), time.perf_counter() - start, learning_rates
    for first in range(0, settings.steps, settings.steps_per_call):
        count = min(settings.steps_per_call, settings.steps - first)
        rngs = jax.random.split(jax.random.fold_in(train_rng, first), count)
        # As before epochs existed: each step's key splits into its batch's and its
        # sample's.
        batch_rngs, sample_rngs = jax.vmap(jax.random.split, out_axes=1)(rngs)
        indices = jax.vmap(lambda key: jax.random.randint(
            key, (settings.batch_size,), 0, len(x)))(batch_rngs)
        params, opt_state, loss = scan_steps(params, opt_state, indices, sample_rngs)
    return params, float(loss), time.perf_counter() - start, learning_rates


def encoder_posteriors(model: VectorIVAE, params: dict, x: np.ndarray,
                       u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The mean and log-variance of q(z | x, u) (q(z | x) for the VAE) at every
    point, each [n, d]."""
    encode = jax.jit(lambda x, u: model.apply({"params": params}, x, u,
                                              method=model.encode))
    mean, log_variance = encode(jnp.asarray(x), jnp.asarray(u))
    return np.asarray(mean, np.float64), np.asarray(log_variance, np.float64)


def posterior_samples(mean: np.ndarray, log_variance: np.ndarray,
                      rng: np.random.Generator) -> np.ndarray:
    """One draw z ~ q(z | x, u) a point: what the iVAE authors score (their runner's
    final MCC is of the reparameterised sample their model's forward pass returns)."""
    return mean + np.exp(0.5 * log_variance) * rng.standard_normal(mean.shape)


def linear_mean_field_gap(data: nonlinear_ica.NonlinearICAData,
                          decoder_variance: float) -> float:
    """For linear mixing x = W·s (one layer): the nats per point by which the ELBO of a
    diagonal-Gaussian posterior falls short of log p(x | u) at the true sources,
    averaged over the segments. The true posterior of s given x and segment m has
    precision Λ_m = WᵀW / σ² + diag(1 / σ_m²) (σ² the decoder variance); the best
    diagonal q keeps its diagonal, and KL(q ‖ posterior) = ½ (Σ_i log Λ_ii − log det
    Λ): 0 when W is orthogonal."""
    if len(data.weights) != 1:
        raise ValueError(f"needs linear mixing (one layer), got {len(data.weights)} layers")
    gram = data.weights[0].T @ data.weights[0] / decoder_variance
    gaps = [0.5 * (np.sum(np.log(np.diag(precision))) - np.linalg.slogdet(precision)[1])
            for precision in (gram + np.diag(1.0 / stds**2) for stds in data.stds)]
    return float(np.mean(gaps))


def trial(seed: int, settings: Settings) -> dict:
    """One seed: its data, both models trained and scored. Returns {model name: {mcc,
    seconds, final_loss}}, "rotation": {mcc, seconds 0} and, for linear mixing,
    "mean_field_gap" (nats per point)."""
    data = make_data(seed, settings)
    x = data.x.astype(np.float32)
    results = {}
    if settings.num_layers == 1:
        results["mean_field_gap"] = linear_mean_field_gap(data, settings.decoder_variance)
    for name, conditional in MODELS.items():
        model = make_model(conditional, data.s.shape[1], data.u.shape[1], settings)
        params, loss, seconds, learning_rates = train(model, x, data.u, seed, settings)
        mean, log_variance = encoder_posteriors(model, params, x, data.u)
        sampled = posterior_samples(mean, log_variance,
                                    np.random.default_rng([seed, int(conditional)]))
        results[name] = {
            "mcc": mean_correlation_coefficient(data.s, mean)["mcc"],
            "mcc_of_samples": mean_correlation_coefficient(data.s, sampled)["mcc"],
            "seconds": seconds, "final_loss": loss}
        if learning_rates:
            results[name]["learning_rates"] = learning_rates
    rotation = nonlinear_ica.random_orthogonal_matrix(np.random.default_rng(seed),
                                                      data.s.shape[1])
    results["rotation"] = {"mcc": mean_correlation_coefficient(data.s, data.s @ rotation)["mcc"],
                           "seconds": 0.0}
    return results


def summarise(trials: list[dict]) -> dict:
    """{row: {mcc_mean, mcc_std, mcc_min, mcc_max, seconds_mean}} over the seeds, and
    for the models mcc_of_samples_mean and _std (one posterior draw a point)."""
    summary = {}
    for name in ROWS:
        scores = np.array([result[name]["mcc"] for result in trials])
        summary[name] = {
            "mcc_mean": float(scores.mean()), "mcc_std": float(scores.std()),
            "mcc_min": float(scores.min()), "mcc_max": float(scores.max()),
            "seconds_mean": float(np.mean([result[name]["seconds"] for result in trials]))}
        if name in MODELS:
            sampled = np.array([result[name]["mcc_of_samples"] for result in trials])
            summary[name].update(mcc_of_samples_mean=float(sampled.mean()),
                                 mcc_of_samples_std=float(sampled.std()))
    return summary


def parse_args(argv=None) -> argparse.Namespace:
    parser = arguments.OneLineArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=arguments.positive_int, default=3,
                        help="seeds 0 .. seeds - 1")
    defaults = Settings()
    for field in dataclasses.fields(Settings):
        default = getattr(defaults, field.name)
        parser.add_argument(f"--{field.name}", default=default,
                            type=_boolean if isinstance(default, bool) else type(default))
    records.add_record_flag(parser)
    return parser.parse_args(argv)


def _boolean(text: str) -> bool:
    if text.lower() not in ("true", "false", "1", "0"):
        raise argparse.ArgumentTypeError(f"{text!r} is not true or false")
    return text.lower() in ("true", "1")


def settings_of(args: argparse.Namespace) -> tuple[Settings, list[int]]:
    """The settings and seeds; SystemExit with one `error:` line for a network the
    model cannot build."""
    settings = Settings(**{field.name: getattr(args, field.name)
                           for field in dataclasses.fields(Settings)})
    for name, least in (("batch_size", 1), ("steps_per_call", 1), ("steps", 0), ("epochs", 0)):
        if getattr(settings, name) < least:
            raise SystemExit(f"error: --{name}={getattr(settings, name)}: give {least} or more")
    if not (settings.epochs or settings.steps):
        raise SystemExit(f"error: --steps={settings.steps} --epochs={settings.epochs} train "
                         f"nothing; give --steps >= 1 (batches drawn with replacement) or "
                         f"--epochs >= 1 (shuffled epochs)")
    try:  # the model's own checks, which name its field (most are flags here too)
        make_model(True, settings.num_sources, settings.num_segments, settings)
        loss_weights(settings)
    except ValueError as error:
        message = str(error)
        flag = "--" if message.split(" ")[0] in Settings.__dataclass_fields__ else ""
        raise SystemExit(f"error: {flag}{message}") from None
    try:  # the data's, whose names of the activation and its slope differ here
        nonlinear_ica.check_arguments(
            settings.num_sources, settings.num_segments, settings.points_per_segment,
            settings.num_layers, settings.distribution, (0.5, 3.0), settings.mean_range,
            settings.mixing_slope, settings.matrices, settings.mixing_activation)
    except ValueError as error:
        name, _, rest = str(error).partition(" ")
        raise SystemExit(f"error: --{DATA_FLAGS.get(name, name)} {rest}") from None
    return settings, list(range(args.seeds))


def parse_settings(argv=None) -> tuple[Settings, list[int]]:
    return settings_of(parse_args(argv))


def main(argv=None) -> None:
    args = parse_args(argv)
    recorder = records.script_recorder(args.record)
    settings, seeds = settings_of(args)
    trials = []
    for seed in seeds:
        trials.append(trial(seed, settings))
        gap = trials[-1].get("mean_field_gap")
        print(f"seed {seed}: " + ", ".join(
            f"{name} MCC {trials[-1][name]['mcc']:.3f} ({trials[-1][name]['seconds']:.0f} s)"
            for name in MODELS)
            + ("" if gap is None else f", mean-field gap at the truth {gap:.2f} nats"),
            flush=True)
    summary = summarise(trials)
    print(f"\n{'model':<8} {'MCC mean ± std':>16} {'min..max':>13} {'train s':>8} "
          f"{'of samples':>16}")
    for name, row in summary.items():
        sampled = (f"{row['mcc_of_samples_mean']:>9.3f} ± {row['mcc_of_samples_std']:.3f}"
                   if "mcc_of_samples_mean" in row else "")
        print(f"{name:<8} {row['mcc_mean']:>9.3f} ± {row['mcc_std']:.3f} "
              f"{row['mcc_min']:>6.3f}..{row['mcc_max']:.3f} {row['seconds_mean']:>8.1f} "
              f"{sampled:>16}")
    figures = {"settings": dataclasses.asdict(settings), "seeds": seeds,
               "summary": summary, "trials": trials}
    print(json.dumps(figures))
    records.write_or_exit(recorder, figures)


if __name__ == "__main__":
    cli.run_script(main)
