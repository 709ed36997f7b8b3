"""Each family's config check names the field at fault, in the config's own words, and
runs when a module is built, before anything is traced; a config read back from JSON
builds the same (hashable) modules."""

import json

import ml_collections
import pytest

from causal_disent import models
from configs import causalvae_pendulum, ctvae_shapes3d

IMAGE_SHAPE = (96, 96, 4)


def mcqvae_section(**fields):
    model_config = ctvae_shapes3d.get_config("tiny").mcqvae.model
    model_config.update(fields)
    return model_config


def ct_section(**fields):
    model_config = ctvae_shapes3d.get_config("tiny").ct.model
    model_config.update(fields)
    return model_config


def causalvae_section(**fields):
    model_config = causalvae_pendulum.get_config("tiny").causalvae.model
    model_config.update(fields)
    return model_config


MCQVAE_ERRORS = [
    (dict(num_codebooks=3), r"mcqvae.model.latent_dim \(D = 8\) must be divisible by "
                            r"mcqvae.model.num_codebooks \(C = 3\)"),
    (dict(num_codebooks=0), "mcqvae.model.num_codebooks must be positive, got 0"),
    (dict(num_codes=0), "mcqvae.model.num_codes must be positive"),
    (dict(hidden_width=-1), "mcqvae.model.hidden_width must be positive"),
    (dict(downsample_widths=()), "mcqvae.model.downsample_widths must name at least one"),
    (dict(activations="relu"), r"mcqvae.model.activations must be one of \('authors', "
                               r"'leaky_relu_in_blocks'\), got 'relu'"),
]
CT_ERRORS = [
    (dict(noise="gaussian"), "ct.model.noise must be one of"),
    (dict(gnn_backend="pyg"), "ct.model.gnn_backend must be one of"),
    (dict(graph_hidden=0), "ct.model.graph_hidden must be positive"),
    (dict(gnn_layers=0), "ct.model.gnn_layers must be positive"),
]
CAUSALVAE_ERRORS = [
    (dict(variant="beta_vae"), "causalvae.model.variant 'beta_vae' is unknown; known: "
                               "causalvae, condition_vae, causalvae_unsup"),
    (dict(decoder="deconv"), "causalvae.model.decoder 'deconv' is unknown"),
    (dict(mechanism_hidden=0), "causalvae.model.mechanism_hidden must be positive"),
    (dict(encoder_widths=()), "causalvae.model.encoder_widths must name at least one width"),
    (dict(decoder_widths=(4,) * 6), r"causalvae.model.decoder_widths has 6 stride-2 layers "
                                    r"but the 96x96 images are not divisible by 2\^6"),
]


@pytest.mark.parametrize("fields, message", MCQVAE_ERRORS)
def test_mcqvae_check_and_build_name_the_field(fields, message):
    with pytest.raises(ValueError, match=message):
        models.check_mcqvae_config(mcqvae_section(**fields))
    with pytest.raises(ValueError, match=message):
        models.build_mcqvae(mcqvae_section(**fields), out_channels=3)


@pytest.mark.parametrize("fields, message", CT_ERRORS)
def test_ct_check_and_build_name_the_field(fields, message):
    with pytest.raises(ValueError, match=message):
        models.check_ct_config(ct_section(**fields))
    with pytest.raises(ValueError, match=message):
        models.build_ct_layer(ct_section(**fields), num_nodes=8, num_codes=4, num_actions=2)


@pytest.mark.parametrize("fields, message", CAUSALVAE_ERRORS)
def test_causalvae_check_and_build_name_the_field(fields, message):
    with pytest.raises(ValueError, match=message):
        models.check_causalvae_config(causalvae_section(**fields), IMAGE_SHAPE)
    with pytest.raises(ValueError, match=message):
        models.build_causalvae(causalvae_section(**fields), IMAGE_SHAPE)


def test_valid_sections_pass_their_checks():
    models.check_mcqvae_config(mcqvae_section())
    models.check_ct_config(ct_section())
    models.check_causalvae_config(causalvae_section(), IMAGE_SHAPE)


def build_every_family(config):
    return (models.build_mcqvae(config.mcqvae.model, out_channels=3),
            models.build_ct_layer(config.ct.model, num_nodes=8, num_codes=4, num_actions=2),
            models.build_causalvae(config.causalvae.model, IMAGE_SHAPE))


def test_a_config_read_back_from_json_builds_equal_hashable_modules():
    config = ctvae_shapes3d.get_config("tiny")
    config.causalvae = causalvae_pendulum.get_config("tiny").causalvae
    read_back = ml_collections.ConfigDict(json.loads(config.to_json_best_effort()))
    assert isinstance(read_back.mcqvae.model.downsample_widths, list)
    built, rebuilt = build_every_family(config), build_every_family(read_back)
    assert rebuilt == built and hash(rebuilt) == hash(built)
