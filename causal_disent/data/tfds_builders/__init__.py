"""TFDS builders for datasets TFDS does not ship (Cars3D, Sprites, MPI3D).

Importing a module registers its builder with TFDS under the dataset's name.
They encode images with PIL, so building them needs no TensorFlow.
"""
