"""Every config file and variant loads, passes validation and builds its models
(nothing compiles)."""

import importlib
import types

import ml_collections
import pytest

from causal_disent import models
from causal_disent.data import registry
from causal_disent.data.base import FactorDataset
from causal_disent.runs import vae as vae_run
from causal_disent.train import stages
from tests.helpers import REPO_ROOT

CONFIG_FILES = sorted(p.stem for p in (REPO_ROOT / "configs").glob("*.py")
                      if not p.stem.startswith("_"))  # "_": shared parts, not configs
VARIANTS = [None, "small", "tiny"]


@pytest.mark.parametrize("name", CONFIG_FILES)
@pytest.mark.parametrize("variant", VARIANTS)
def test_config_loads_and_validates(name, variant, tmp_path, monkeypatch):
    """Every config validates; one of a real dataset first names the dataset as not
    prepared (in an empty data_dir), then validates the rest with it stubbed out."""
    module = importlib.import_module(f"configs.{name}")
    config = module.get_config(variant)
    if registry.DATASETS[config.data.name].reads_data_dir:
        unprepared = config.copy_and_resolve_references()
        unprepared.data.data_dir = str(tmp_path / "empty_data_dir")
        with pytest.raises(stages.InvalidRunError, match="is not prepared"):
            stages.validate(unprepared, tmp_path / "unprepared", stages.make_data_mesh())
        stand_in = real_dataset_stand_in(config.data.name)
        monkeypatch.setattr(registry, "dataset_from_config", lambda data_config: stand_in)
    stages.validate(config, tmp_path, stages.make_data_mesh())


def real_dataset_stand_in(name: str):
    """A dataset of the real one's size and factors (its images are not on this
    machine), for the checks of batch sizes against its splits and of CT-VAE's
    transitions: the factor grid of the dataset's class, or CelebA's 202 599 images."""
    dataset_class = registry.dataset_class(name)
    if not registry.DATASETS[name].factor_grid:
        return types.SimpleNamespace(num_images=202_599,
                                     attribute_names=dataset_class.attribute_names)
    grid = {field: getattr(dataset_class, field)
            for field in ("factor_names", "factor_sizes", "factor_values", "nuisance_factors")}
    return type(f"{dataset_class.__name__}StandIn", (FactorDataset,), grid)()


@pytest.mark.parametrize("name", CONFIG_FILES)
@pytest.mark.parametrize("variant", VARIANTS)
def test_model_sections_hold_exactly_their_modules_fields(name, variant):
    """A section with a key that is not a field of its module, or without one of its
    fields, fails to build (the image, node, code and action sizes are made up)."""
    config = importlib.import_module(f"configs.{name}").get_config(variant)
    if "mcqvae" in config.stages:
        models.build_mcqvae(config.mcqvae.model, out_channels=3)
    if "ct" in config.stages:
        models.build_ct_layer(config.ct.model, num_nodes=8,
                              num_codes=config.mcqvae.model.num_codes, num_actions=2)
    if "causalvae" in config.stages:
        models.build_causalvae(config.causalvae.model, image_shape=(64, 64, 3))
    if "vae" in config.stages:  # its module follows the loss (runs/vae.MODEL_BUILDERS)
        vae_run.build_model(config, registry.dataset_from_config(config.data))


def test_unknown_variant_is_rejected():
    module = importlib.import_module("configs.ctvae_shapes3d")
    with pytest.raises(ValueError, match="unknown config variant 'smal'"):
        module.get_config("smal")


def test_a_variant_table_naming_a_field_the_base_lacks_is_refused():
    from configs import _variants
    base = ml_collections.ConfigDict({"ct": {"train": {"num_steps": 0}}})
    table = {"ct.train": {"num_steps": 5, "num_stpes": 6}}
    with pytest.raises(ValueError, match=r"variant 'small' sets ct.train.num_stpes, not a "
                                         r"field of the base config"):
        _variants.apply_variant(base, "small", {"small": (table,)})
    fresh = ml_collections.ConfigDict({"ct": {"train": {"num_steps": 0}}})
    applied = _variants.apply_variant(fresh, "small",
                                      {"small": ({"ct.train": {"num_steps": 5}},)})
    assert applied.ct.train.num_steps == 5


def test_gpu_variant_keeps_the_paper_sizes_and_records_curves(tmp_path):
    module = importlib.import_module("configs.ctvae_shapes3d")
    config, base = module.get_config("gpu"), module.get_config()
    assert config.mcqvae.model == base.mcqvae.model and config.ct.model == base.ct.model
    assert config.mcqvae.train.num_steps > 0 and config.ct.train.num_steps > 0
    assert config.ct.train.eval_every_steps > 0
    assert config.ct.train.num_steps % config.ct.train.checkpoint_every_steps == 0
    stages.validate(config, tmp_path, stages.make_data_mesh())
