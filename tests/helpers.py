"""Helpers shared by the tests (import as `from tests.helpers import ...`)."""

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def tiny_config():
    """configs/ctvae_shapes3d.py:tiny (both stages), a fresh copy each call."""
    from configs import ctvae_shapes3d

    return ctvae_shapes3d.get_config("tiny")
