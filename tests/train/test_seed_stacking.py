"""`config.num_seeds`: S models of the VAE family in one vmapped step. Model k of a
stacked run with seed s is the run of seed s + k trained alone (same parameters,
same scores); each is written as a run of its own that the loaders read; bad
values are refused before compiling. Tiny networks (configs/*_dsprites_synth.py:tiny)."""

import functools
import json
import types

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax.training.train_state import TrainState

from causal_disent.data import registry
from causal_disent.evaluation import trained_runs
from causal_disent.objectives.vae import bind_loss
from causal_disent.runs import seeds as seeds_format
from causal_disent.runs import vae as vae_run
from causal_disent.runs.config_file import read_config
from causal_disent.train import multi_step, runner, seed_stacking, stages, vae_stage
from causal_disent.utils.sharding import make_data_mesh
from configs import betavae_dsprites_synth, causalvae_pendulum, factorvae_dsprites_synth

SEEDS = 2


def stacked_config(module=betavae_dsprites_synth):
    config = module.get_config("tiny")
    config.seed = 3
    config.num_seeds = SEEDS
    return config


def single_config(module, seed):
    config = module.get_config("tiny")
    config.seed = seed
    return config


@pytest.fixture(scope="module")
def stacked_and_single_runs(tmp_path_factory):
    """{loss module: (stacked workdir, its results, {seed: single workdir})} for β-VAE
    and FactorVAE (a state with two parameter groups and two optimisers)."""
    runs = {}
    for module in (betavae_dsprites_synth, factorvae_dsprites_synth):
        workdir = tmp_path_factory.mktemp("stacked")
        results = stages.run(stacked_config(module), workdir)
        singles = {}
        for seed in (3, 4):
            singles[seed] = tmp_path_factory.mktemp(f"single{seed}")
            stages.run(single_config(module, seed), singles[seed])
        runs[module.__name__] = (workdir, results, singles)
    return runs


def trained_params(workdir):
    config = read_config(workdir)
    dataset = registry.dataset_from_config(config.data)
    _, params = vae_run.load_trained(config, workdir, make_data_mesh(), dataset)
    return jax.device_get(params)


@pytest.mark.parametrize("module", [betavae_dsprites_synth, factorvae_dsprites_synth],
                         ids=["beta_vae", "factor_vae"])
def test_each_stacked_model_is_its_seed_trained_alone(stacked_and_single_runs, module):
    workdir, results, singles = stacked_and_single_runs[module.__name__]
    assert results["vae"]["seeds"] == [3, 4]
    for seed, single_dir in singles.items():
        seed_dir = seeds_format.seed_workdir(workdir, seed)
        jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-6),
                     trained_params(seed_dir), trained_params(single_dir))
        alone = json.loads((single_dir / "results.json").read_text())["vae"]
        stacked = json.loads((seed_dir / "results.json").read_text())["vae"]
        np.testing.assert_allclose(stacked["test_bce"], alone["test_bce"], rtol=1e-5)
        # The consistency scores' draws are seeded by the model's own seed, as alone.
        np.testing.assert_allclose(stacked["consistency"]["inv"], alone["consistency"]["inv"],
                                   rtol=1e-3, atol=1e-5)
        assert stacked["steps"] == alone["steps"]
        assert json.loads((seed_dir / "config.json").read_text())["seed"] == seed
        assert (seed_dir / "figures" / "vae_reconstructions.png").exists()


@pytest.mark.parametrize("execution, gpu_loop", [("vmap", True), ("vmap_matmul", False)])
def test_vmapped_seeds_are_the_unrolled_ones(stacked_and_single_runs, tmp_path, execution,
                                             gpu_loop, monkeypatch, capsys):
    """The runs above unroll the seeds (the CPU's "auto") and run one step a call on
    host batches; vmapping the seeds trains the same models, with convolutions or
    with their matmul form, the former as a GPU's "auto" runs them: its steps a call
    chosen by train.steps_per_call = 0 (two, the largest divisor of :tiny's intervals
    of 2 steps), as a loop, their batches gathered from the device table."""
    config = stacked_config()
    config.seed_execution = execution
    if gpu_loop:
        assert config.vae.train.steps_per_call == multi_step.AUTO  # every config's default
        config.vae.train.update(unroll_call="off", device_data="on")
        monkeypatch.setattr(runner, "platform_of", lambda mesh: "gpu")
    stages.run(config, tmp_path)
    assert ("[vae] compiling the 2-step call" in capsys.readouterr().out) == gpu_loop
    unrolled_dir, _, _ = stacked_and_single_runs[betavae_dsprites_synth.__name__]
    for seed in (3, 4):
        jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-6),
                     trained_params(seeds_format.seed_workdir(tmp_path, seed)),
                     trained_params(seeds_format.seed_workdir(unrolled_dir, seed)))


def test_the_copies_note_is_for_seeds_and_steps_both_unrolled():
    note = seed_stacking.unrolled_copies_note
    assert "80 copies" in note(8, "unroll", 10, steps_unrolled=True)
    assert note(8, "vmap", 10, steps_unrolled=True) is None  # one copy per step
    assert note(8, "unroll", 10, steps_unrolled=False) is None  # a loop: one copy per seed
    assert note(8, "unroll", 1, steps_unrolled=True) is None
    assert note(1, "unroll", 10, steps_unrolled=True) is None


def test_unknown_seed_execution_is_refused(tmp_path):
    config = stacked_config()
    config.seed_execution = "pmap"
    with pytest.raises(stages.InvalidRunError, match="seed_execution must be one of"):
        stages.validate(config, tmp_path, make_data_mesh())


def test_the_seeds_differ_and_the_summary_is_over_them(stacked_and_single_runs):
    workdir, results, _ = stacked_and_single_runs[betavae_dsprites_synth.__name__]
    bce = results["vae"]["over_seeds"]["test_bce"]
    per_seed = [json.loads((seeds_format.seed_workdir(workdir, seed) / "results.json")
                           .read_text())["vae"]["test_bce"] for seed in (3, 4)]
    assert bce["values"] == per_seed
    assert per_seed[0] != per_seed[1]
    np.testing.assert_allclose(bce["mean"], np.mean(per_seed))
    np.testing.assert_allclose(bce["std"], np.std(per_seed, ddof=1))
    rows = [json.loads(line) for line in (workdir / "metrics.jsonl").read_text().splitlines()]
    assert len(rows[-1]["loss_per_seed"]) == SEEDS
    np.testing.assert_allclose(rows[-1]["loss"], np.mean(rows[-1]["loss_per_seed"]),
                               rtol=1e-6)


def test_scoring_the_stacked_workdir_names_the_seed_workdirs(stacked_and_single_runs):
    workdir, _, _ = stacked_and_single_runs[betavae_dsprites_synth.__name__]
    with pytest.raises(trained_runs.RunError, match="trained 2 models at once .*seeds/seed_3"):
        trained_runs.open_run(workdir, make_data_mesh())


def test_a_rerun_of_a_finished_stacked_run_is_skipped(stacked_and_single_runs):
    workdir, results, _ = stacked_and_single_runs[betavae_dsprites_synth.__name__]
    assert stages.run(stacked_config(), workdir) == results


@pytest.mark.parametrize("execution", ["vmap", "unroll", "vmap_matmul"])
def test_stacked_step_is_each_seeds_step_with_a_shared_counter(execution):
    def create(rng):
        return TrainState.create(apply_fn=None, params={"w": jax.random.normal(rng, (3,))},
                                 tx=optax.sgd(0.1))

    def step(state, batch, rng):
        grads = jax.grad(lambda p: jnp.sum((p["w"] - batch["x"]) ** 2))(state.params)
        return state.apply_gradients(grads=grads), {"loss": jnp.sum(batch["x"]),
                                                    "vector": batch["x"]}

    rngs = jax.random.split(jax.random.key(0), 4)
    state = jax.jit(seed_stacking.stacked_state_factory(create, rngs))()
    assert state.params["w"].shape == (4, 3) and state.step.shape == ()
    batch = {"x": jnp.arange(12.0).reshape(4, 3)}
    new_state, metrics = jax.jit(seed_stacking.stacked_step(step, execution))(
        state, batch, rngs)
    for k in range(4):
        alone, _ = step(create(rngs[k]), {"x": batch["x"][k]}, rngs[k])
        np.testing.assert_allclose(new_state.params["w"][k], alone.params["w"], rtol=1e-6)
    assert int(new_state.step) == 1
    np.testing.assert_allclose(metrics["loss_per_seed"], [3.0, 12.0, 21.0, 30.0])
    np.testing.assert_allclose(metrics["loss"], 16.5)
    assert metrics["vector"].shape == (3,) and "vector_per_seed" not in metrics


@pytest.mark.parametrize("execution, convolutions", [("vmap", True), ("vmap_matmul", False)])
def test_vmap_matmul_leaves_no_convolution_in_the_stacked_step(execution, convolutions):
    """The whole β-VAE step of 2 stacked seeds, lowered: its convolutions (forward and
    gradients) are matmuls under vmap_matmul, convolutions under vmap."""
    config = stacked_config()
    dataset = registry.dataset_from_config(config.data)
    model = vae_run.build_model(config, dataset)
    loss_fn = bind_loss(config.vae.objective, model, dataset_size=dataset.num_images)
    step_fn = functools.partial(vae_stage.vae_train_step, loss_fn=loss_fn)
    rngs = jax.random.split(jax.random.key(0), SEEDS)
    state = jax.eval_shape(seed_stacking.stacked_state_factory(
        lambda rng: vae_run.state_factory(config, model, dataset.image_shape, rng)(), rngs))
    batch = {"image": jax.ShapeDtypeStruct((SEEDS, 4, *dataset.image_shape), jnp.float32)}
    hlo = jax.jit(seed_stacking.stacked_step(step_fn, execution)).lower(
        state, batch, rngs).as_text()
    assert ("convolution" in hlo) == convolutions


def test_num_seeds_must_split_evenly_over_the_devices(tmp_path):
    config = stacked_config()
    config.num_seeds = 3
    with pytest.raises(ValueError, match="num_seeds 3 must be a multiple of the 2 devices"):
        seed_stacking.check_num_seeds(config, types.SimpleNamespace(size=2))
    config.num_seeds = 4
    seed_stacking.check_num_seeds(config, types.SimpleNamespace(size=2))
    config.num_seeds = 0
    with pytest.raises(stages.InvalidRunError, match="num_seeds must be >= 1"):
        stages.validate(config, tmp_path, make_data_mesh())


def test_num_seeds_on_a_stage_without_stacking_is_refused(tmp_path):
    config = causalvae_pendulum.get_config("tiny")
    config.num_seeds = 2
    with pytest.raises(stages.InvalidRunError, match="not supported by stage 'causalvae'"):
        stages.validate(config, tmp_path, make_data_mesh())


def test_closing_the_seeds_checkpoints_waits_for_all_and_raises_the_first_failure():
    closed = []

    def checkpoints(name, failure=None):
        def close():
            closed.append(name)
            if failure is not None:
                raise failure
        return types.SimpleNamespace(close=close)

    full = OSError(28, "No space left on device")
    with pytest.raises(OSError) as raised:
        seed_stacking.close_all([checkpoints(0), checkpoints(1, full),
                                 checkpoints(2, KeyError("later")), checkpoints(3)])
    assert raised.value is full and closed == [0, 1, 2, 3]
    seed_stacking.close_all([checkpoints(4)])  # nothing failed: nothing raised


def test_a_seeds_folder_is_written_from_the_run_and_never_trained_alone(
        stacked_and_single_runs, tmp_path):
    """A model's folder is an export of the stacked run: training there would leave it
    disagreeing with the run's results over the seeds, so it is refused; an unreadable
    checkpoint of it, or its results gone, are written again by evaluating the run
    again, as their errors say."""
    import shutil

    from causal_disent.runs.checkpoint import CheckpointError
    from causal_disent.runs.results import ResultsError
    from tests.helpers import truncate_data_files

    workdir = tmp_path / "run"
    shutil.copytree(stacked_and_single_runs[betavae_dsprites_synth.__name__][0], workdir)
    seed = seeds_format.seed_workdir(workdir, 4)
    assert seeds_format.stacked_run_of(seed) == workdir
    with pytest.raises(stages.InvalidRunError) as refused:
        stages.run(read_config(seed), seed)
    assert str(refused.value) == (
        f"{seed} is one model of the many-seed run in {workdir}, which trains it and writes "
        f"it from its own checkpoints: train or resume that run with --workdir={workdir}, "
        f"or this seed alone in a new --workdir with --config.seed=4")

    trained = trained_params(seed)
    [step] = [path for path in (seed / "checkpoints" / "vae").iterdir()]
    truncate_data_files(step)
    with pytest.raises(CheckpointError, match=(
            rf"cannot be read .*Nothing was changed; {seed} is one model of the many-seed "
            rf"run in {workdir}, whose checkpoints hold it: `python -m causal_disent.main "
            rf"--workdir={workdir} --mode=eval` writes it again$")):
        trained_params(seed)
    (seed / "results.json").unlink()  # its figures' titles quote them
    with pytest.raises(ResultsError, match=rf"^{seed} holds no vae results \(moved or "
                                           rf"deleted\?\); `python -m causal_disent.main "
                                           rf"--workdir={workdir} --mode=eval` writes"):
        stages.run(read_config(workdir), workdir, mode="figures")
    stages.run(read_config(workdir), workdir, mode="eval")
    jax.tree.map(np.testing.assert_array_equal, trained_params(seed), trained)
    assert "vae" in json.loads((seed / "results.json").read_text())


def test_only_a_folder_inside_a_runs_own_folders_is_inside_it(tmp_path):
    """A run in `a` (config.json, figures/): a/figures/x is refused; a/x (a run beside
    its folders: one trained into /tmp once), a/figures/../../b (really b) are not."""
    run = tmp_path / "a"
    (run / "figures").mkdir(parents=True)
    (run / "config.json").write_text("{}")
    with pytest.raises(stages.InvalidRunError, match=r"is inside the figures/ folder of the "
                                                    r"run in .*a, whose files"):
        stages.check_outside_other_runs(run / "figures" / "x")
    stages.check_outside_other_runs(run / "x")
    stages.check_outside_other_runs(run / "figures" / ".." / ".." / "b")
