"""The stage-2 code cache: same batches and same first steps as encoding on the fly,
and every way a cache can be wrong is refused with an error naming the fix.

Runs on a 729-image corner of shapes3d_synth so that encoding a whole dataset is
cheap."""

import dataclasses
import json
import shutil

import numpy as np
import pytest

from causal_disent.data import registry, splits, transitions
from causal_disent.evaluation import ct_retrieval
from causal_disent.runs import mcqvae as mcqvae_run
from causal_disent.train import ct_codes, ct_stage, stages
from causal_disent.utils.sharding import global_batch, make_data_mesh
from tests.helpers import serve_small_shapes3d, tiny_config

CT_STEPS = 3


@pytest.fixture(scope="module", autouse=True)
def small_dataset():
    with pytest.MonkeyPatch.context() as monkeypatch:
        yield serve_small_shapes3d(monkeypatch)


def small_config(code_source: str, stage1_workdir=None):
    config = tiny_config()
    config.data.name = "shapes3d_corner"
    config.ct.train.code_source = code_source
    config.ct.train.num_steps = CT_STEPS
    config.ct.train.eval_every_steps = 0
    config.ct.train.code_cache_batch_size = 256
    if stage1_workdir is not None:
        config.stages = ("ct",)
        config.ct.mcqvae_workdir = str(stage1_workdir)
    return config


@pytest.fixture(scope="module")
def stage1(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("small_stage1")
    config = small_config("encode")
    config.stages = ("mcqvae",)
    stages.run(config, workdir)
    return workdir


@pytest.fixture(scope="module")
def both_runs(stage1, tmp_path_factory):
    """Stage 2 of the same stage 1, reading the cache and encoding on the fly."""
    runs = {}
    for source in ("cache", "encode"):
        workdir = tmp_path_factory.mktemp(f"small_{source}")
        stages.run(small_config(source, stage1), workdir)
        runs[source] = workdir
    return runs


def ct_rows(workdir):
    rows = [json.loads(line) for line in (workdir / "metrics.jsonl").read_text().splitlines()]
    return [row for row in rows if row["stage"] == "ct"]


def test_cached_and_on_the_fly_stage_two_take_the_same_first_steps(both_runs):
    assert (both_runs["cache"] / "code_cache" / "codes.npy").exists()
    assert not (both_runs["encode"] / "code_cache").exists()
    cached, encoded = ct_rows(both_runs["cache"]), ct_rows(both_runs["encode"])
    assert [r["step"] for r in cached] == [r["step"] for r in encoded] == list(range(1, CT_STEPS + 1))
    for a, b in zip(cached, encoded):
        assert a["mode"] == b["mode"]
        for key in ("loss", "grad_norm"):
            np.testing.assert_allclose(a[key], b[key], rtol=1e-5, err_msg=f"step {a['step']} {key}")


def test_cached_batches_equal_encoded_batches(stage1, both_runs):
    config = small_config("cache", stage1)
    mesh = make_data_mesh()
    dataset = registry.dataset_from_config(config.data)
    split = splits.dataset_split(dataset, config.data.split_fractions, config.data.split_seed)
    sampler = transitions.sampler_for(dataset, split, seed=config.seed)
    mcqvae, params = mcqvae_run.load_trained(config, stage1, mesh, dataset)
    encode = ct_retrieval.make_encoder(mcqvae, mesh)
    identity = ct_codes.cache_identity(config, dataset, mcqvae, params, stage1)
    codes = ct_codes.load(both_runs["cache"] / "code_cache", identity)
    assert codes.shape == (dataset.num_images, identity.num_nodes) and codes.dtype == np.uint8

    def batches(codes_or_none):
        return list(ct_stage.transition_batches(
            dataset, sampler, "train", config.ct.optim.batch_size, 0, 4, prefetch=0,
            codes=codes_or_none))

    for cached, rendered in zip(batches(codes), batches(None)):
        on_the_fly = ct_codes.batch_codes(global_batch(rendered, mesh), encode, params)
        for key in ("x_codes", "y_codes", "action"):
            np.testing.assert_array_equal(cached[key], np.asarray(on_the_fly[key]), err_msg=key)


def test_auto_caches_only_when_it_saves_encodes():
    identity = ct_codes.CacheIdentity("d", num_images=1000, num_nodes=64, num_codes=64,
                                        stage1_step=1, params_hash="h")
    train = tiny_config().ct.train
    train.code_source = "auto"
    assert not ct_codes.use_code_cache(train, batch_size=16, total_steps=31, identity=identity)
    assert ct_codes.use_code_cache(train, batch_size=16, total_steps=32, identity=identity)
    train.code_cache_max_gb = 1e-6  # 64 kB cache > 1 kB
    assert not ct_codes.use_code_cache(train, batch_size=16, total_steps=10**6, identity=identity)
    train.code_source = "cache"
    with pytest.raises(ct_codes.CodeCacheError, match="code_source=encode"):
        ct_codes.use_code_cache(train, batch_size=16, total_steps=10, identity=identity)


# ---- a cache that does not fit the run is refused, never used ---------------------


@pytest.fixture
def built_cache(both_runs, tmp_path):
    """A copy of the cached run's cache and the identity it was built for."""
    directory = tmp_path / "code_cache"
    shutil.copytree(both_runs["cache"] / "code_cache", directory)
    meta = json.loads((directory / "codes.json").read_text())
    identity = ct_codes.CacheIdentity(
        **{f.name: meta[f.name] for f in dataclasses.fields(ct_codes.CacheIdentity)})
    return directory, identity


def test_a_valid_cache_loads(built_cache):
    directory, identity = built_cache
    assert ct_codes.load(directory, identity).shape == (identity.num_images, identity.num_nodes)


def test_cache_of_another_stage_one_checkpoint_is_refused(built_cache):
    directory, identity = built_cache
    other = dataclasses.replace(identity, stage1_step=identity.stage1_step + 100,
                                params_hash="0123456789abcdef")
    with pytest.raises(ct_codes.CodeCacheError, match=r"built from stage-1 step .*delete .* to rebuild"):
        ct_codes.load(directory, other)


def test_cache_of_another_dataset_is_refused(built_cache):
    directory, identity = built_cache
    other = dataclasses.replace(identity, dataset="shapes3d_synth", num_images=480_000)
    with pytest.raises(ct_codes.CodeCacheError,
                       match=r"dataset 'shapes3d_corner'.*uses 'shapes3d_synth'.*--workdir"):
        ct_codes.load(directory, other)


def test_truncated_cache_file_is_refused(built_cache):
    directory, identity = built_cache
    path = directory / "codes.npy"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(ct_codes.CodeCacheError, match="truncated or corrupt.*delete"):
        ct_codes.load(directory, identity)


def test_damaged_cache_file_is_refused(built_cache):
    directory, identity = built_cache
    path = directory / "codes.npy"
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(ct_codes.CodeCacheError, match="checksum"):
        ct_codes.load(directory, identity)


def test_a_build_that_never_finished_is_rebuilt(built_cache):
    directory, identity = built_cache
    (directory / "codes.json").unlink()  # the metadata is written last
    assert ct_codes.load(directory, identity) is None


def test_stale_cache_stops_the_run_with_the_fix(stage1, both_runs, tmp_path):
    """The whole run stops before training, with a one-line error, and the cache is
    left as it was."""
    workdir = tmp_path / "run"
    shutil.copytree(both_runs["cache"] / "code_cache", workdir / "code_cache")
    meta_path = workdir / "code_cache" / "codes.json"
    meta = json.loads(meta_path.read_text())
    meta["params_hash"] = "ffffffffffffffff"
    meta_path.write_text(json.dumps(meta))
    before = (workdir / "code_cache" / "codes.npy").read_bytes()
    with pytest.raises(stages.InvalidRunError) as error:
        stages.run(small_config("cache", stage1), workdir)
    message = str(error.value)
    assert "\n" not in message and "ffffffffffffffff" in message and "delete" in message
    assert (workdir / "code_cache" / "codes.npy").read_bytes() == before
    assert not (workdir / "checkpoints" / "ct").exists() or not any(
        (workdir / "checkpoints" / "ct").iterdir())
