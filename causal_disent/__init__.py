"""causal_disent: causal disentanglement of images in JAX/Flax."""

__version__ = "0.1.0"
