"""Tiny real two-stage runs: stage 2 outputs, frozen stage 1, errors, the API."""

import json
import re
import shutil

import jax
import jax.numpy as jnp
import numpy as np
import orbax.checkpoint as ocp
import pytest
from PIL import Image

from causal_disent import ct_interventions as interventions
from causal_disent.data import registry, splits, transitions
from causal_disent.runs import checkpoint, stage_one_record
from causal_disent.runs import ct as ct_run
from causal_disent.runs import mcqvae as mcqvae_run
from causal_disent.runs import metrics_log
from causal_disent.runs.config_file import read_config
from causal_disent.train import ct_stage, stages
from tests.helpers import run_intervene, tiny_config


@pytest.fixture(scope="module")
def two_stage_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("two_stage")
    results = stages.run(tiny_config(), workdir)
    return workdir, results


def restore_params(workdir, stage):
    with ocp.CheckpointManager(checkpoint.checkpoint_dir(workdir, stage)) as manager:
        restored = manager.restore(
            manager.latest_step(), args=ocp.args.Composite(state=ocp.args.StandardRestore())
        )
    return restored.state["params"]


def test_two_stage_run_writes_results_metrics_and_figures(two_stage_run):
    workdir, results = two_stage_run
    assert set(results) == {"mcqvae", "ct"}
    ct = json.loads((workdir / "results.json").read_text())["ct"]
    assert ct["steps"] == 6 and ct["num_pairs"] == 10
    for key in ("action_accuracy", "factor_accuracy", "node_accuracy", "exact_match", "decoded_mse"):
        assert np.isfinite(ct[key]), key
    assert ct["action_chance"] == pytest.approx(1 / 12) and ct["factor_chance"] == pytest.approx(1 / 6)
    assert np.sum(ct["confusion"]) == 10
    rows = metrics_log.read_rows(workdir, validation=False)  # training rows
    ct_rows = [row for row in rows if row["stage"] == "ct"]
    assert [row["step"] for row in ct_rows] == [1, 2, 3, 4, 5, 6]
    assert {row["mode"] for row in ct_rows} == {"standard", "action", "causal"}
    assert all(np.isfinite(row["loss"]) for row in ct_rows)
    for name in ("ct_interventions.png", "ct_structure_masks.png", "ct_structure_adjacency.png",
                 "ct_confusion.png", "ct_learning_curve.png"):
        assert (workdir / "figures" / name).stat().st_size > 0
    # Per-action diagnostics and the learning curve (every 3 steps, and the last).
    assert np.sum(ct["action_confusion"]) == 10 and np.shape(ct["action_confusion"]) == (12, 12)
    assert len(ct["per_action_accuracy"]) == 12
    # The lists are labelled, and each action's pairs are counted.
    assert ct["action_names"][:2] == ["floor_hue+", "wall_hue+"] and len(ct["action_names"]) == 12
    assert ct["factor_names"] == ["floor_hue", "wall_hue", "object_hue", "scale", "shape",
                                  "orientation"]
    assert ct["per_action_pairs"] == np.sum(ct["action_confusion"], axis=1).tolist()
    assert [a is None for a in ct["per_action_accuracy"]] == [n == 0 for n in ct["per_action_pairs"]]
    assert [point["step"] for point in ct["curve"]] == [0, 3, 6]
    assert all(0 <= point["action_accuracy"] <= 1 for point in ct["curve"])
    # The headline is named, and the draws sit beside it (curve points too).
    assert ct["headline"] == "most_likely" and "probability > 0.5" in ct["headline_structure"]
    draws = ct["draws"]
    assert draws["num_draws"] == 2 and "Gumbel" in draws["structure"]
    for key in ("action_accuracy", "factor_accuracy"):
        values = draws[key]["values"]
        assert len(values) == 2 and draws[key]["mean"] == pytest.approx(np.mean(values))
        assert draws[key]["std"] == pytest.approx(np.std(values, ddof=1))
        assert all(f"{key}_draws_{stat}" in point for point in ct["curve"]
                   for stat in ("mean", "std"))


def test_stage_two_records_its_stage_one_and_refuses_another(two_stage_run, tmp_path):
    """A CT layer paired with a stage 1 it was not trained on (another run's, trained
    on since) is refused by every command that pairs them."""
    workdir, _ = two_stage_run
    config, mesh = read_config(workdir), stages.make_data_mesh()
    dataset = registry.dataset_from_config(config.data)
    _, mcqvae_params = mcqvae_run.load_trained(config, workdir, mesh, dataset)
    assert json.loads(stage_one_record.record_path(workdir).read_text()) == {
        "workdir": str(workdir), "step": config.mcqvae.train.num_steps,
        "params_hash": stage_one_record.params_hash(mcqvae_params)}
    trained_on = jax.tree.map(lambda value: value + 1e-3, mcqvae_params)
    refusal = (rf"stage 2 in .* was trained on the stage 1 of {re.escape(str(workdir))} at step "
               rf"{config.mcqvae.train.num_steps} \(parameters [0-9a-f]{{16}}\), but that stage "
               rf"1 is now .*: its codes are not the ones stage 2 learned on\. Restore that "
               rf"stage 1, or train stage 2 again in a new --workdir")
    with pytest.raises(checkpoint.CheckpointError, match=refusal):
        ct_run.load_trained(config, workdir, mesh, dataset, stage1_params=trained_on)
    copy = tmp_path / "run"
    shutil.copytree(workdir, copy)
    record = stage_one_record.record_path(copy)
    record.write_text(record.read_text().replace(
        stage_one_record.params_hash(mcqvae_params), "0123456789abcdef"))
    with pytest.raises(checkpoint.CheckpointError, match="its codes are not the ones"):
        stages.run(read_config(copy), copy, mode="eval")  # the stage itself checks too


def test_headline_does_not_move_with_the_evaluation_key(two_stage_run):
    """Two evaluations of one checkpoint under different keys give the same headline
    (no draw enters it); the draws depend on the key alone."""
    from causal_disent.evaluation import ct_evaluation
    from causal_disent.evaluation.ct_retrieval import make_encoder

    workdir, _ = two_stage_run
    config, mesh = read_config(workdir), stages.make_data_mesh()
    dataset = registry.dataset_from_config(config.data)
    mcqvae, mcqvae_params = mcqvae_run.load_trained(config, workdir, mesh, dataset)
    model, params = ct_run.load_trained(config, workdir, mesh, dataset,
                                        stage1_params=mcqvae_params)
    sampler = transitions.sampler_for(dataset, splits.configured_split(dataset, config.data),
                                      seed=config.seed)

    def evaluate(seed):
        return ct_evaluation.evaluate(
            model=model, params=params, mcqvae=mcqvae, mcqvae_params=mcqvae_params,
            encode=make_encoder(mcqvae, mesh), dataset=dataset,
            pairs=sampler.fixed_set("test", 10), mesh=mesh, batch_size=4,
            rng=jax.random.key(seed), num_draws=2)

    first, second, again = evaluate(1), evaluate(2), evaluate(1)
    headline = {key: value for key, value in first.items() if key != "draws"}
    assert headline == {key: value for key, value in second.items() if key != "draws"}
    assert first["draws"] == again["draws"]


def test_stage_one_stays_frozen_during_stage_two(two_stage_run):
    """The MCQ-VAE parameters at the end equal those stage 1 saved: stage 2 holds
    only CT parameters."""
    workdir, _ = two_stage_run
    ct_params = restore_params(workdir, "ct")
    assert "encoder" not in ct_params and "quantizer" not in ct_params
    model = interventions.CTVAE.load(workdir)
    jax.tree.map(np.testing.assert_array_equal, model.mcqvae_params, restore_params(workdir, "mcqvae"))


def test_mode_schedule_is_seeded_and_follows_the_proportions():
    modes = [ct_stage.mode_of_step(0, step, (0.77, 0.115, 0.115)) for step in range(4000)]
    assert modes == [ct_stage.mode_of_step(0, step, (0.77, 0.115, 0.115)) for step in range(4000)]
    share = modes.count("standard") / len(modes)
    assert abs(share - 0.77) < 0.03
    assert all(ct_stage.mode_of_step(0, s, (0, 0, 1)) == "causal" for s in range(50))


def test_interventions_api(two_stage_run):
    workdir, _ = two_stage_run
    model = interventions.CTVAE.load(workdir)
    dataset = registry.get_dataset("shapes3d_synth")
    x, y = dataset.images(np.array([0, 1]))
    chain = interventions.apply_action(model, x, action=5, times=3)
    assert chain.shape == (4, 64, 64, 3) and chain.dtype == np.uint8
    probs = interventions.infer_action(model, x, y)
    assert probs.shape == (12,) and abs(probs.sum() - 1) < 1e-5
    assert interventions.infer_action(model, dataset.images(np.arange(3)), dataset.images(np.arange(3))).shape == (3, 12)
    with pytest.raises(ValueError, match="out of range.*12 actions"):
        interventions.apply_action(model, x, action=12)
    for not_an_index in (2.5, True, "3", np.float32(1)):
        with pytest.raises(ValueError, match="action must be an integer index"):
            interventions.apply_action(model, x, action=not_an_index)
    with pytest.raises(ValueError, match="times must be an integer >= 1"):
        interventions.apply_action(model, x, action=np.int64(1), times=1.5)
    with pytest.raises(ValueError, match=r"images must be \[H, W, ch\]"):
        interventions.apply_action(model, x[:32], action=1)
    with pytest.raises(ValueError, match="must be uint8"):
        interventions.infer_action(model, x.astype(np.float32), y)
    with pytest.raises(ValueError, match=r"\[H, W, ch\] = \[64, 64, 3\]"):
        interventions.infer_action(model, x[:32], y[:32])


def test_stage_two_without_stage_one_is_a_clear_error(tmp_path):
    config = tiny_config()
    config.stages = ("ct",)
    with pytest.raises(stages.InvalidRunError, match="no stage-1 .*checkpoint"):
        stages.validate(config, tmp_path, stages.make_data_mesh())


def test_stage_one_checkpoint_of_another_architecture(two_stage_run, tmp_path):
    workdir, _ = two_stage_run
    config = tiny_config()
    config.stages = ("ct",)
    config.ct.mcqvae_workdir = str(workdir)
    config.mcqvae.model.num_codes = 16
    with pytest.raises(stages.InvalidRunError, match="incompatible config.*num_codes"):
        stages.validate(config, tmp_path, stages.make_data_mesh())


def test_stage_two_on_another_runs_stage_one_by_relative_path(two_stage_run, tmp_path,
                                                               monkeypatch):
    """Stage 1 is not trained again, and the stored path works from anywhere."""
    stage1_workdir, _ = two_stage_run
    monkeypatch.chdir(stage1_workdir.parent)
    config = tiny_config()  # stages ("mcqvae", "ct")
    config.ct.mcqvae_workdir = stage1_workdir.name
    config.ct.train.num_steps, config.ct.train.eval_every_steps = 2, 0  # kept short
    workdir = tmp_path / "stage2"
    results = stages.run(config, workdir)
    assert set(results) == {"ct"}
    assert not checkpoint.checkpoint_dir(workdir, "mcqvae").exists()
    assert read_config(workdir).ct.mcqvae_workdir == str(stage1_workdir)
    monkeypatch.chdir(tmp_path)  # the tools run from elsewhere find stage 1
    result = run_intervene(workdir, "--index=3", "--action=floor_hue+", "--times=1",
                           f"--out={tmp_path / 'strip.png'}")
    assert result.returncode == 0, result.stderr[-3000:]


def test_bad_ct_config_values(tmp_path):
    config = tiny_config()
    config.ct.objective.mode_proportions = (1.0, 0.0)
    with pytest.raises(stages.InvalidRunError, match="mode_proportions"):
        stages.validate(config, tmp_path, stages.make_data_mesh())
    config = tiny_config()
    config.ct.model.noise = "gaussian"
    with pytest.raises(stages.InvalidRunError, match="noise must be one of"):
        stages.validate(config, tmp_path, stages.make_data_mesh())
    config = tiny_config()
    config.ct.objective.action_mix = "paper"
    with pytest.raises(stages.InvalidRunError, match=r"action_mix must be one of \('balanced', "):
        stages.validate(config, tmp_path, stages.make_data_mesh())
    config = tiny_config()
    config.data.name = "celeb_a"
    config.ct.objective.action_mix = "authors"
    with pytest.raises(ValueError, match="celeb_a has attributes: use "
                                         "--config.ct.objective.action_mix=balanced"):
        ct_stage.validate(config, stages.make_data_mesh(), tmp_path)
    config = tiny_config()
    config.ct.objective.structure_noise_final = 1.5
    with pytest.raises(stages.InvalidRunError, match=r"structure_noise_final must be in \[0, 1\]"):
        stages.validate(config, tmp_path, stages.make_data_mesh())


def test_metric_card_of_a_trained_run(two_stage_run):
    from causal_disent.evaluation import card, representations, trained_runs
    from causal_disent.utils.sharding import make_data_mesh

    workdir, results = two_stage_run
    run = trained_runs.open_run(workdir, make_data_mesh(), batch_size=16)
    assert run.family == "ctvae" and list(run.representations) == ["code_indices",
                                                                     "codebook_vectors"]
    config = tiny_config().mcqvae.model
    images = run.dataset.images(np.arange(3))
    nodes = config.num_codebooks * (64 // 2 ** len(config.downsample_widths)) ** 2
    indices = run.representations["code_indices"](images)
    assert indices.shape == (3, nodes)
    assert np.all(indices == np.round(indices)) and indices.min() >= 0
    assert indices.max() < config.num_codes
    vectors = run.representations["codebook_vectors"](images)
    assert vectors.shape == (3, nodes * config.latent_dim // config.num_codebooks)
    cached = representations.CachedCodes(run.dataset, run.representations["code_indices"])
    scored = card.metric_card(run.dataset, cached, ["mig", "betavae"], num_samples=40)
    assert 0.0 <= scored["metrics"]["mig"]["scores"]["discrete_mig"] <= 1.0
    causal = run.causal_scores()
    assert causal["action_accuracy"] == pytest.approx(results["ct"]["action_accuracy"])


def test_eval_and_figures_modes_revisit_a_finished_run(two_stage_run, tmp_path, capsys):
    """--mode=eval scores the final checkpoints again (deterministic: the same results)
    and redraws the figures; --mode=figures redraws them alone. Neither touches the
    checkpoints; each ends with the summary."""
    workdir, _ = two_stage_run
    copy = tmp_path / "run"
    shutil.copytree(workdir, copy)
    recorded = json.loads((copy / "results.json").read_text())
    shutil.rmtree(copy / "figures")
    checkpoints = sorted(path.relative_to(copy) for path in (copy / "checkpoints").rglob("*"))

    stages.run(read_config(copy), copy, mode="eval")
    assert json.loads((copy / "results.json").read_text()) == recorded
    assert (copy / "figures" / "ct_interventions.png").exists()
    assert (copy / "figures" / "mcqvae_reconstructions.png").exists()
    out = capsys.readouterr().out
    assert "[ct] evaluating step 6 on the test split..." in out
    assert re.search(r"^  ct +test action accuracy", out, re.MULTILINE), out

    shutil.rmtree(copy / "figures")
    results_bytes = (copy / "results.json").read_bytes()
    stages.run(read_config(copy), copy, mode="figures")
    assert (copy / "figures" / "ct_structure_masks.png").exists()
    assert (copy / "results.json").read_bytes() == results_bytes
    assert sorted(path.relative_to(copy)
                  for path in (copy / "checkpoints").rglob("*")) == checkpoints


def test_eval_mode_refuses_a_run_that_has_not_finished(two_stage_run, tmp_path):
    workdir, _ = two_stage_run
    copy = tmp_path / "run"
    shutil.copytree(workdir, copy)
    results = json.loads((copy / "results.json").read_text())
    del results["ct"]  # as if killed after its last checkpoint, before its evaluation
    (copy / "results.json").write_text(json.dumps(results))
    with pytest.raises(stages.InvalidRunError,
                       match=r"stage 'ct' in .* has not finished training \(its latest "
                             r"checkpoint is step 6\)"):
        stages.run(read_config(copy), copy, mode="eval")


def test_intervene_writes_a_labelled_strip(two_stage_run, tmp_path):
    workdir, _ = two_stage_run
    out = tmp_path / "strip.png"
    result = run_intervene(workdir, "--index=3", "--action=floor_hue+", "--times=2",
                           f"--out={out}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"intervention strip: {out}" in result.stdout
    assert not re.search(r"^[IW]\d{4} ", result.stderr, re.MULTILINE), result.stderr  # no chatter
    with Image.open(out) as strip:
        width, height = strip.size
    assert width > 4 * 64 > height  # input, reconstruction, x1, x2 side by side


def test_the_step_carries_the_annealed_structure_noise_only_when_asked():
    """At structure_noise_final = 1 the batch is the paper's (no key, the same compiled
    step); below 1 it holds the scale of the step being taken."""
    import optax

    from causal_disent.objectives import ct as ct_objectives
    from causal_disent.train import ct_stage
    from causal_disent.train.state import TrainState

    seen = []

    def loss_fn(params, batch, rng):
        seen.append(batch.get(ct_objectives.STRUCTURE_NOISE))
        return jnp.sum(params["w"] ** 2), {}

    state = TrainState.create(apply_fn=None, params={"w": jnp.ones(2)}, tx=optax.sgd(0.1))
    state = state.replace(step=30)
    ct_stage.ct_train_step(state, {}, jax.random.key(0), loss_fn=loss_fn, total_steps=100,
                           noise_final=1.0)
    ct_stage.ct_train_step(state, {}, jax.random.key(0), loss_fn=loss_fn, total_steps=100,
                           noise_final=0.0)
    assert seen[0] is None and float(seen[1]) == pytest.approx(0.7)
