"""The explicit causal latent block (XBlock) of "Interventional consistency in
autoencoders" (ICLR 2021 submission, §2.2): the latent layer split into noise units
N (what the encoder outputs) and causal units Z, each Z_i a learned function of its
own noise and of its masked predecessors, as in a structural causal model in a fixed
order:

    Z_i = f_i(M_i ⊙ Z_<i, N_i),   i = 1 … n

f_i is an MLP with Mish activations (the paper's nonlinearity) and M_i ∈ [0, 1]^(i−1)
a mask over the predecessors, learned through its logits α. In training the mask is
a binary relaxed sample σ((α + ε) / τ) (Jang et al., "Categorical Reparameterization
with Gumbel-Softmax", ICLR 2017; models/gumbel.py), one per batch; out of training
(no "mask" rng given) its mean-field value σ(α / τ). Each causal unit has
`unit_size` dimensions (the paper's "units consisting of multiple dimensions"); each
noise unit is one dimension.

The paper's authors' code (GiuliaLanzillotta/CausalAE, models/layers.py `VecSCM`,
experiments/utils.py) fixes what the paper leaves open, and the XAE configs follow
it: ε one Gumbel(0, 1) draw per gate (`mask_noise`), α starting standard normal
(`mask_init`), τ annealed as max(τ₀·exp(−0.01·step), 0.01) so that the gates are
near-hard after about 460 steps, the paper's "weight sharpening"
(`temperature_schedule`), and f_i with two hidden layers of 10 and Mish on its output
too (`hidden`, `num_hidden_layers`, `output_activation`), initialised as PyTorch's
`nn.Linear` under their `standard_initialisation` for Mish: Xavier-normal weights
and uniform biases in ±1/√fan-in, each f_i over its own inputs (its i·unit_size
possible parents and its noise) (`weight_init`, `bias_init`). A field's default is
what a config written before the field existed meant: Logistic ε, α from zero, a
constant τ, no output activation, LeCun-normal weights over the full input width and
zero biases.

The step reaches the block as an argument (`__call__(noise, step)`); without one τ is
the schedule's last value (its floor), which is what evaluation uses.

`structural_map` applies every f_i once to a given Z (the block's one-step map,
whose Jacobian the tests check: ∂Z_i/∂Z_j = 0 where M_ij = 0 or j ≥ i); `__call__`
solves the triangular system by n such steps, each fixing one more unit.
"""

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from causal_disent.models import gumbel

MASK_RNG = "mask"  # the rng stream of the training-time mask samples
# τ(step): "constant" τ₀; "exponential" max(τ₀·exp(−decay·step), min_temperature).
TEMPERATURE_SCHEDULES = ("constant", "exponential")
# ε of the relaxed mask σ((α + ε) / τ): one Gumbel(0, 1) draw (the authors' code) or
# one Logistic(0, 1) draw (the binary Gumbel-softmax: a difference of two Gumbels).
MASK_NOISES = ("gumbel", "logistic")
# α's initialiser: standard normal (the authors' code) or zeros (every gate at ½).
MASK_INITS = {"normal": nn.initializers.normal(1.0), "zeros": nn.initializers.zeros}
# f_i's weights: Flax's LeCun normal over the full input width (n·unit_size parents +
# noise, the same for every unit), or Xavier (Glorot) normal over each f_i's own
# fan-in and fan-out, as torch.nn.init.xavier_normal_ on the authors' per-unit layers.
WEIGHT_INITS = ("lecun_normal", "glorot_normal")
# f_i's biases: zeros, or U(−1/√fan-in, 1/√fan-in) over f_i's own fan-in (PyTorch's
# nn.Linear default, which the authors' initialisation leaves in place).
BIAS_INITS = ("zeros", "uniform_fan_in")


def check_xblock_config(block_config, num_units: int) -> None:
    """Raises ValueError naming the first field of `block_config` (an XBlock, or the
    config section `vae.model.xblock`) that cannot build a block of `num_units` units
    (the encoder's latent size)."""
    if num_units < 1:
        raise ValueError(f"the XBlock needs at least one unit, got {num_units}")
    for name in ("unit_size", "hidden", "num_hidden_layers"):
        if getattr(block_config, name) < 1:
            raise ValueError(f"vae.model.xblock.{name} must be positive, got "
                             f"{getattr(block_config, name)}")
    for name in ("temperature", "min_temperature", "temperature_decay"):
        value = getattr(block_config, name, 1.0)
        if not value > 0:
            raise ValueError(f"vae.model.xblock.{name} must be > 0, got {value}")
    choices = (("temperature_schedule", TEMPERATURE_SCHEDULES, "constant"),
               ("mask_noise", MASK_NOISES, "logistic"), ("mask_init", tuple(MASK_INITS), "zeros"),
               ("weight_init", WEIGHT_INITS, "lecun_normal"), ("bias_init", BIAS_INITS, "zeros"))
    for name, allowed_values, before in choices:
        value = getattr(block_config, name, before)
        if value not in allowed_values:
            raise ValueError(f"vae.model.xblock.{name} must be one of {allowed_values}, got "
                             f"{value!r}")
    allowed = getattr(block_config, "allowed_parents", None)
    if allowed is None:
        return
    shape = jnp.shape(jnp.asarray(allowed))
    if shape != (num_units, num_units):
        raise ValueError(
            f"vae.model.xblock.allowed_parents is a {'x'.join(map(str, shape))} mask but "
            f"the block has {num_units} units (vae.model.num_latents): give an "
            f"{num_units}x{num_units} 0/1 matrix, or None for every predecessor")
    for i, row in enumerate(allowed):
        for j, entry in enumerate(row):
            if entry not in (0, 1) or (entry and j >= i):
                raise ValueError(
                    f"vae.model.xblock.allowed_parents[{i}][{j}] is {entry!r}: entries "
                    "are 0 or 1, and 1 only below the diagonal (unit i's parents are "
                    "units j < i)")


class XBlock(nn.Module):
    """Noise N [B, n] -> causal units Z [B, n·unit_size] (unit i in columns
    i·unit_size … (i + 1)·unit_size − 1).

    Fields: num_units n (the encoder's latent size), unit_size, hidden,
    num_hidden_layers and output_activation (each f_i's MLP: Mish after every hidden
    layer, and after the output when output_activation), the temperature τ₀ of the
    mask's relaxation and its `temperature_schedule` (with temperature_decay and
    min_temperature), `mask_noise`, `mask_init`, and allowed_parents: None (every
    predecessor may be a parent) or an n x n 0/1 tuple of tuples, 1 where parent j < i
    may feed unit i (M_ij is 0 elsewhere: a known or hypothesised graph, in the
    block's order).
    """

    num_units: int
    unit_size: int = 1
    hidden: int = 32
    num_hidden_layers: int = 1
    output_activation: bool = False
    temperature: float = 1.0
    temperature_schedule: str = "constant"
    temperature_decay: float = 0.01
    min_temperature: float = 0.01
    mask_noise: str = "logistic"
    mask_init: str = "zeros"
    weight_init: str = "lecun_normal"
    bias_init: str = "zeros"
    allowed_parents: tuple[tuple[int, ...], ...] | None = None

    def __post_init__(self):
        check_xblock_config(self, self.num_units)
        super().__post_init__()

    def setup(self):
        n, size, hidden = self.num_units, self.unit_size, self.hidden
        # α_ij, the logit of parent j's mask in unit i's input; only j < i is used.
        self.mask_logits = self.param("mask_logits", MASK_INITS[self.mask_init], (n, n))
        # The n MLPs as stacked weights (unit axis first), so that one einsum runs them
        # all: input n·size masked parents + 1 noise value.
        widths = [n * size + 1] + [hidden] * self.num_hidden_layers + [size]
        layers = list(zip(widths[:-1], widths[1:]))
        # The inputs each f_i really has: its possible parents' columns and its noise
        # in the first layer, the hidden width after it.
        fan_ins = [self.first_layer_fan_ins()] + [np.full(n, width) for width in widths[1:-1]]
        # Every kernel before every bias: the order of the params rng's draws, which
        # configs written before the init fields existed rely on.
        self.kernels = [self.param(f"kernel{k}", self._kernel_init(fan_ins[k], width_out),
                                   (n, width_in, width_out))
                        for k, (width_in, width_out) in enumerate(layers)]
        self.biases = [self.param(f"bias{k}", self._bias_init(fan_ins[k]), (n, width_out))
                       for k, (_, width_out) in enumerate(layers)]

    def first_layer_fan_ins(self) -> np.ndarray:
        """[n]: the inputs of f_i's first layer that can be non-zero, unit_size per
        possible parent (`parent_support`) and one noise value."""
        return self._support().sum(axis=1) * self.unit_size + 1

    def _kernel_init(self, fan_ins: np.ndarray, fan_out: int):
        if self.weight_init == "lecun_normal":
            return nn.initializers.lecun_normal(batch_axis=(0,))

        def glorot_normal(key, shape, dtype=jnp.float32):
            # torch's xavier_normal_: an untruncated normal of variance 2 / (fan-in +
            # fan-out), one fan-in per unit.
            std = np.sqrt(2.0 / (fan_ins + fan_out))
            return jax.random.normal(key, shape, dtype) * jnp.asarray(std, dtype)[:, None, None]
        return glorot_normal

    def _bias_init(self, fan_ins: np.ndarray):
        if self.bias_init == "zeros":
            return nn.initializers.zeros

        def uniform_fan_in(key, shape, dtype=jnp.float32):
            bound = jnp.asarray(1.0 / np.sqrt(fan_ins), dtype)[:, None]
            return jax.random.uniform(key, shape, dtype, -1.0, 1.0) * bound
        return uniform_fan_in

    def temperature_at(self, step: jax.Array | int | None = None) -> jax.Array | float:
        """τ at training step `step`; None (evaluation) is the schedule's last value."""
        if self.temperature_schedule == "constant":
            return self.temperature
        if step is None:
            return self.min_temperature
        annealed = self.temperature * jnp.exp(-self.temperature_decay * jnp.asarray(step))
        return jnp.maximum(annealed, self.min_temperature)

    def parent_mask(self, step: jax.Array | int | None = None) -> jax.Array:
        """M [n, n] (M_ij is parent j's gate into unit i), zero off `parent_support`: a
        relaxed sample σ((α + ε) / τ) when a "mask" rng is given, else σ(α / τ); τ of
        `step` (`temperature_at`)."""
        temperature = self.temperature_at(step)
        if self.has_rng(MASK_RNG):
            rng = self.make_rng(MASK_RNG)
            if self.mask_noise == "gumbel":
                noise = gumbel.gumbel_noise(rng, self.mask_logits.shape)
                mask = jax.nn.sigmoid((self.mask_logits + noise) / temperature)
            else:
                mask = gumbel.relaxed_bernoulli(rng, self.mask_logits, temperature)
        else:
            mask = jax.nn.sigmoid(self.mask_logits / temperature)
        return mask * self.parent_support()

    def parent_support(self) -> jax.Array:
        """[n, n] 0/1: where M_ij may be non-zero (j < i, and allowed_parents)."""
        return jnp.asarray(self._support(), jnp.float32)

    def _support(self) -> np.ndarray:
        """`parent_support` as a NumPy constant (the initialisers' fan-ins read it too)."""
        support = np.tril(np.ones((self.num_units, self.num_units), np.float32), k=-1)
        if self.allowed_parents is not None:
            support = support * np.asarray(self.allowed_parents, np.float32)
        return support

    def structural_map(self, causes: jax.Array, noise: jax.Array,
                       mask: jax.Array) -> jax.Array:
        """One step: every f_i at once on the given causes. causes [B, n, unit_size],
        noise [B, n], mask [n, n] -> [B, n, unit_size], unit i = f_i(M_i ⊙ Z, N_i)."""
        batch = causes.shape[0]
        parents = mask[None, :, :, None] * causes[:, None, :, :]  # [B, i, j, size]
        inputs = jnp.concatenate(
            [parents.reshape(batch, self.num_units, -1), noise[..., None]], axis=-1)
        hidden = inputs
        for k, (kernel, bias) in enumerate(zip(self.kernels, self.biases)):
            hidden = jnp.einsum("bif,ifo->bio", hidden, kernel) + bias
            if k < len(self.kernels) - 1 or self.output_activation:
                hidden = jax.nn.mish(hidden)
        return hidden

    def __call__(self, noise: jax.Array, step: jax.Array | int | None = None) -> jax.Array:
        """N [B, n] -> Z [B, n·unit_size], one mask for the whole batch, its τ that of
        training step `step` (None: the schedule's last value)."""
        if noise.ndim != 2 or noise.shape[-1] != self.num_units:
            raise ValueError(f"the XBlock's noise must be [B, {self.num_units}]; got shape "
                             f"{noise.shape}")
        mask = self.parent_mask(step)
        causes = jnp.zeros((noise.shape[0], self.num_units, self.unit_size), noise.dtype)
        # Step i fixes unit i: its parents j < i are already final, so n steps solve
        # the triangular system exactly.
        for unit in range(self.num_units):
            causes = causes.at[:, unit].set(
                self.structural_map(causes, noise, mask)[:, unit])
        return causes.reshape(noise.shape[0], -1)
