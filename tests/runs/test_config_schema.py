"""A config file's fields against the library's configs: every library config passes in
every variant; a field none of them has, or one the nearest of them has and the file
lacks, is refused with a line that names it and the fix."""

import ml_collections
import pytest

from causal_disent import cli
from causal_disent.runs import config_schema
from tests.helpers import REPO_ROOT

VARIANTS = ("", ":small", ":tiny")


@pytest.fixture(scope="module")
def library():
    return cli.library_configs()


def _library_config(name: str, variant: str = ":tiny") -> ml_collections.ConfigDict:
    return cli.load_config_file(str(REPO_ROOT / "configs" / name) + variant, lock=False,
                                check_fields=False)


def test_every_library_config_passes_in_every_variant(library):
    assert len(library) >= 30  # every experiment config, none of the shared parts
    assert not any(name.startswith("configs/_") for name in library)
    problems = {f"{name}{variant}": config_schema.field_problem(
                    _library_config(name.removeprefix("configs/"), variant), library)
                for name in library for variant in VARIANTS}
    assert {name: problem for name, problem in problems.items() if problem} == {}


def test_a_misspelt_or_invented_field_is_refused_with_the_nearest_name(library):
    config = _library_config("betavae_dsprites_synth.py")
    config.vae.optim.learnin_rate = 1e-3
    config.notes = "my run"
    config.vae.model.xblock = {"unit_size": 2, "units": 3}  # an XVAE section, one field invented
    problem = config_schema.field_problem(config, library)
    assert "vae.optim.learnin_rate (did you mean vae.optim.learning_rate?)" in problem
    listed = problem.split("has them): ")[1].split("; rename")[0].split("; ")
    # vae.model.xblock.unit_size, another config's field, is unused here and allowed.
    assert [entry.split(" ")[0] for entry in listed] == [
        "notes", "vae.model.xblock.units", "vae.optim.learnin_rate"]
    assert "configs/betavae_dsprites_synth.py, the library's config nearest to it" in problem


def test_a_lacking_section_or_field_names_the_nearest_config_and_its_values(library):
    factor = _library_config("factorvae_shapes3d_synth.py")
    del factor.vae["discriminator"]
    del factor.vae.train["steps_per_call"]
    problem = config_schema.field_problem(factor, library)
    # The nearest by loss, fields and dataset: not the β-VAE, whose fields it now has.
    assert "as configs/factorvae_shapes3d_synth.py (the library's config nearest" in problem
    assert "vae.discriminator (a section: model, optim)" in problem
    assert "vae.train.steps_per_call = 0" in problem
    assert "from configs import factorvae_shapes3d_synth" in problem


def test_a_stage_needs_the_sections_of_the_stages_before_it_not_after(library):
    stage_one = _library_config("ctvae_shapes3d.py")
    stage_one.stages = ("mcqvae",)
    del stage_one["ct"]
    assert config_schema.field_problem(stage_one, library) is None
    stage_two = _library_config("ctvae_shapes3d.py")
    stage_two.stages = ("ct",)
    del stage_two["mcqvae"]  # stage 2 builds stage 1's encoder from it
    assert "lacks fields its stages read: mcqvae (a section: model, optim, train)" in (
        config_schema.field_problem(stage_two, library))


def test_without_library_configs_nothing_is_checked():
    config = ml_collections.ConfigDict({"anything": 1})
    assert config_schema.field_problem(config, {}) is None


def test_load_config_file_refuses_a_file_with_a_misspelt_field(tmp_path):
    path = tmp_path / "mine.py"
    path.write_text("from configs import betavae_dsprites_synth\n\n\n"
                    "def get_config(variant=None):\n"
                    "    config = betavae_dsprites_synth.get_config(variant)\n"
                    "    config.vae.objective.betta = 8.0\n"
                    "    return config\n")
    with pytest.raises(ValueError, match=r"vae.objective.betta \(did you mean vae.objective.beta\?"):
        cli.load_config_file(f"{path}:tiny")
    assert cli.load_config_file(f"{path}:tiny", check_fields=False).vae.objective.betta == 8.0
