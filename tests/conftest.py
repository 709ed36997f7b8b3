"""Shared fixtures: a tiny CT-VAE config so compilation stays cheap on 2 cores."""

import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))  # `configs` and `tests` are folders, not packages

from tests import helpers  # noqa: E402


@pytest.fixture
def tiny():
    return helpers.tiny_config()
