"""A workdir's config.json read back: older layouts read as today's config."""

import json

from causal_disent.runs import config_fields
from causal_disent.runs.config_file import read_config, write_config
from configs import betavae_dsprites_synth, ctvae_shapes3d


def _written(tmp_path, values: dict):
    (tmp_path / "config.json").write_text(json.dumps(values))
    return read_config(tmp_path)


def _as_saved(config) -> dict:
    return json.loads(config.to_json_best_effort())


def test_a_ct_run_saved_before_the_eval_section_reads_as_todays_config(tmp_path):
    today = ctvae_shapes3d.get_config("tiny")
    old = _as_saved(today)
    evaluation = old["ct"].pop("eval")
    old["ct"]["train"].update(num_eval_pairs=evaluation["num_test_pairs"],
                              headline=evaluation["headline"],
                              num_eval_draws=evaluation["num_draws"])
    del old["data"]["path"]  # a field added later still
    read = _written(tmp_path, old)
    assert config_fields.differences(read, today) == []
    assert "num_eval_pairs" not in read.ct.train and read.ct.eval.num_test_pairs == 10


def test_a_ct_run_saved_before_the_headline_and_draws_gets_what_it_was_scored_with(tmp_path):
    old = _as_saved(ctvae_shapes3d.get_config("tiny"))
    evaluation = old["ct"].pop("eval")
    old["ct"]["train"]["num_eval_pairs"] = evaluation["num_test_pairs"]
    read = _written(tmp_path, old)
    assert dict(read.ct.eval) == {"num_test_pairs": 10, "headline": "most_likely",
                                  "num_draws": 8}


def test_a_run_without_a_ct_stage_gets_no_ct_section_and_todays_layout_is_unchanged(tmp_path):
    vae = _as_saved(betavae_dsprites_synth.get_config("tiny"))
    del vae["data"]["path"]
    read = _written(tmp_path, vae)
    assert "ct" not in read and read.data.path == ""
    today = ctvae_shapes3d.get_config("tiny")
    today.ct.eval.headline = "sample"
    write_config(tmp_path, today)
    assert config_fields.differences(read_config(tmp_path), today) == []


def test_the_eval_and_retrieval_sections_only_say_how_a_stage_is_scored():
    assert config_fields.only_scoring("eval.num_draws")
    assert config_fields.only_scoring("retrieval")  # the whole section added or removed
    assert config_fields.only_scoring("train.num_eval_images")
    assert not config_fields.only_scoring("train.num_steps")
    assert not config_fields.only_scoring("model.gnn_hidden")
