"""Loading a config file from Python as `--config=FILE.py[:variant]` loads it."""

import pytest

from causal_disent import cli
from configs import ctvae_shapes3d
from tests.helpers import REPO_ROOT


def test_load_config_file_picks_the_variant_relative_to_the_working_directory(monkeypatch):
    monkeypatch.chdir(REPO_ROOT)
    tiny = cli.load_config_file("configs/ctvae_shapes3d.py:tiny")
    assert tiny.to_dict() == ctvae_shapes3d.get_config("tiny").to_dict()
    base = cli.load_config_file(str(REPO_ROOT / "configs" / "ctvae_shapes3d.py"))
    assert base.to_dict() == ctvae_shapes3d.get_config().to_dict()


def test_loaded_config_is_locked_like_the_command_line_one(monkeypatch):
    monkeypatch.chdir(REPO_ROOT)
    config = cli.load_config_file("configs/ctvae_shapes3d.py:tiny")
    config.ct.train.num_steps = 3  # an existing field: fine
    with pytest.raises(AttributeError):
        config.ct.train.num_stepz = 3  # a misspelt one is refused, not added
    assert cli.load_config_file("configs/ctvae_shapes3d.py:tiny", lock=False).is_locked is False


def test_load_config_file_errors_name_the_problem(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match="configs/nope.py does not exist.*repository root"):
        cli.load_config_file("configs/nope.py:tiny")
    with pytest.raises(ValueError, match="unknown config variant 'huge'"):
        cli.load_config_file(str(REPO_ROOT / "configs" / "ctvae_shapes3d.py") + ":huge")
