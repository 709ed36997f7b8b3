"""Bad input on the command lines, as a user types it: each case ends with status 1,
an `error:` line naming the problem and the fix, no traceback, nothing compiled and
nothing written to the workdir. The commands run in parallel, once per module."""

import concurrent.futures
import os
import re
import socket
import subprocess
import sys

import pytest
from PIL import Image

from causal_disent.runs.config_file import write_config
from tests import own_data_fixtures
from tests.helpers import REPO_ROOT, tiny_config
from tests.own_data_fixtures import write_image_folder, write_npz

CT = "--config=configs/ctvae_shapes3d.py:tiny"
VAE = "--config=configs/betavae_dsprites_synth.py:tiny"
XAE = "--config=configs/xae_dsprites_synth.py:tiny"
MAIN = "causal_disent.main"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def slurm_task(process_id: int) -> dict:
    """A task of a two-task SLURM job on this host, as JAX's cluster detection reads it
    (each case its own port: the cases run at once)."""
    return {"SLURM_JOB_ID": "7", "SLURM_STEP_NODELIST": "localhost", "SLURM_NTASKS": "2",
            "SLURM_PROCID": str(process_id), "SLURM_LOCALID": "0",
            "JAX_COORDINATOR_PORT": str(_free_port())}

# (id, module, arguments ({w}: a fresh workdir, {tmp}: the case's folder, holding
# small.png (32 x 32), dict_config.py (a get_config() giving a plain dict),
# misspelt_config.py and no_optim_config.py (β-VAE's tiny config with a misspelt field
# added, or with its vae.optim section taken out),
# outside_a_pod/ (a `kubernetes` package whose pod has no service account) and {run},
# the workdir of a tiny CT-VAE run that never trained: config.json alone; {started}: the
# same with a checkpoint folder of stage 1; {own}: datasets of one's own with bad input,
# written by tests/own_data_fixtures.py), error
# regex[, environment variables to set, {tmp} as above])
CASES = [
    ("missing config file", MAIN, ["--config=configs/nope.py", "--workdir={w}"],
     r"config file configs/nope.py does not exist; pass --config=configs/<name>.py"),
    ("a directory as the config", MAIN, ["--config=configs", "--workdir={w}"],
     r"--config=configs is a directory; pass one of its files, --config=configs/<name>.py"),
    ("shared part as a config", MAIN, ["--config=configs/_loop_settings.py", "--workdir={w}"],
     r"the config file defines no get_config\(\); pass an experiment's config"),
    ("unknown variant", MAIN, ["--config=configs/ctvae_shapes3d.py:huge", "--workdir={w}"],
     r"unknown config variant 'huge'; known: small, tiny"),
    ("misspelt field", MAIN, [CT, "--workdir={w}", "--config.mcqvae.optim.learnin_rate=1"],
     r"mcqvae.optim has no field 'learnin_rate'; did you mean mcqvae.optim.learning_rate\?"),
    ("field in another section", MAIN, [VAE, "--workdir={w}", "--config.vae.model.beta=2"],
     r"vae.model has no field 'beta'; did you mean vae.objective.beta\?"),
    ("unknown section", MAIN, [CT, "--workdir={w}", "--config.mcqvae.optimiser.batch_size=2"],
     r"mcqvae has no field 'optimiser'; did you mean mcqvae.optim\?"),
    ("wrong type", MAIN, [CT, "--workdir={w}", "--config.mcqvae.optim.batch_size=abc"],
     r"--config.mcqvae.optim.batch_size=abc: invalid literal for int"),
    ("negative batch", MAIN, [CT, "--workdir={w}", "--config.mcqvae.optim.batch_size=-8"],
     r"mcqvae.optim.batch_size must be an integer > 0, got -8"),
    ("codebooks do not divide D", MAIN,
     [CT, "--workdir={w}", "--config.mcqvae.model.num_codebooks=3"],
     r"mcqvae.model.latent_dim \(D = 8\) must be divisible by mcqvae.model.num_codebooks "
     r"\(C = 3\)"),
    ("unknown headline", MAIN, [CT, "--workdir={w}", "--config.ct.eval.headline=mean"],
     r"ct.eval.headline must be one of \('most_likely', 'sample'\), got 'mean'"),
    ("zero batch", MAIN, [CT, "--workdir={w}", "--config.ct.optim.batch_size=0"],
     r"ct.optim.batch_size must be an integer > 0, got 0"),
    ("negative warm-up", MAIN, [CT, "--workdir={w}", "--config.ct.optim.warmup_steps=-1"],
     r"ct.optim.warmup_steps must be an integer >= 0 \(0 = none\), got -1"),
    ("zero checkpoint interval", MAIN,
     [CT, "--workdir={w}", "--config.mcqvae.train.checkpoint_every_steps=0"],
     r"mcqvae.train.checkpoint_every_steps must be an integer > 0"),
    ("zero log interval", MAIN, [VAE, "--workdir={w}", "--config.vae.train.log_every_steps=0"],
     r"vae.train.log_every_steps must be an integer > 0"),
    ("negative steps", MAIN, [CT, "--workdir={w}", "--config.mcqvae.train.num_steps=-5"],
     r"mcqvae.train.num_steps must be an integer >= 0, got -5"),
    ("NaN learning rate", MAIN, [CT, "--workdir={w}", "--config.mcqvae.optim.learning_rate=nan"],
     r"mcqvae.optim.learning_rate must be a finite number > 0, got nan"),
    ("negative learning rate", MAIN, [VAE, "--workdir={w}", "--config.vae.optim.learning_rate=-1"],
     r"vae.optim.learning_rate must be a finite number > 0"),
    ("negative seed", MAIN, [CT, "--workdir={w}", "--config.seed=-1"],
     r"^error: seed must be an integer >= 0, got -1"),
    ("compilation cache is a file", MAIN,
     [VAE, "--workdir={w}", "--compilation_cache={tmp}/small.png"],
     r"^error: the compilation cache .*small.png \(--compilation_cache\) cannot be used: "
     r".*; give a writable folder, or 'off'$"),
    ("no checkpoints kept", MAIN,
     [CT, "--workdir={w}", "--config.mcqvae.train.max_checkpoints_to_keep=0"],
     r"max_checkpoints_to_keep must be an integer > 0"),
    ("zero eval batch", MAIN, [CT, "--workdir={w}", "--config.mcqvae.train.eval_batch_size=0"],
     r"mcqvae.train.eval_batch_size must be an integer > 0"),
    ("zero seeds", MAIN, [VAE, "--workdir={w}", "--config.num_seeds=0"],
     r"num_seeds must be >= 1, got 0"),
    ("negative consistency weight", MAIN, ["--config=configs/xae_dsprites_synth.py:tiny",
     "--workdir={w}", "--config.vae.consistency.invariance_weight=-1"],
     r"vae.consistency.invariance_weight must be >= 0, got -1"),
    ("unknown kernel spec", MAIN,
     [VAE, "--workdir={w}", "--config.vae.model.encoder_kernel_sizes=(4,4,2)"],
     r"vae.model.encoder_kernel_sizes must give one positive whole kernel side per encoder "
     r"convolution \(2, "),
    ("unknown initialiser", MAIN, [VAE, "--workdir={w}", "--config.vae.model.weight_init=he"],
     r"vae.model.weight_init must be one of \('glorot_uniform', 'lecun_normal'\), got 'he'"),
    ("unknown consistency error", MAIN, [XAE, "--workdir={w}", "--config.vae.consistency.error=l1"],
     r"vae.consistency.error must be one of \('l2', 'squared'\), got 'l1'"),
    ("an autoencoder's consistency drawn from a prior it lacks", MAIN,
     [XAE, "--workdir={w}", "--config.vae.consistency.prior=standard_normal"],
     r"vae.consistency.prior='standard_normal' needs a variational loss, but the "
     r"autoencoder's has no prior or posterior variance; use prior='hybrid'"),
    ("unknown equivariance", MAIN,
     [XAE, "--workdir={w}", "--config.vae.consistency.equivariance=same"],
     r"vae.consistency.equivariance must be one of \('commute', 'self'\), got 'same'"),
    ("unknown temperature schedule", MAIN,
     [XAE, "--workdir={w}", "--config.vae.model.xblock.temperature_schedule=cosine"],
     r"vae.model.xblock.temperature_schedule must be one of \('constant', 'exponential'\), "
     r"got 'cosine'"),
    ("negative time budget", MAIN, [CT, "--workdir={w}", "--max_minutes=-1"],
     r"--max_minutes=-1: -1.0 is not a non-negative number"),
    ("a time budget that is not a number", MAIN, [CT, "--workdir={w}", "--max_minutes=nan"],
     r"flag --max_minutes=nan: not a number of minutes; give 0 \(no budget\) or more"),
    ("a config file whose get_config gives a dict", MAIN,
     ["--config={tmp}/dict_config.py", "--workdir={w}"],
     r"the config file's get_config\(\) returned a dict, not an ml_collections.ConfigDict"),
    ("a config file with a misspelt field", MAIN,
     ["--config={tmp}/misspelt_config.py", "--workdir={w}"],
     r"the config sets fields that no stage reads .*: vae.optim.learnin_rate \(did you mean "
     r"vae.optim.learning_rate\?\); rename or remove them"),
    ("a config file without a section its stage reads", MAIN,
     ["--config={tmp}/no_optim_config.py", "--workdir={w}"],
     r"the config lacks fields its stages read: vae.optim \(a section: b1, b2, batch_size, "
     r"eps, learning_rate\), as configs/betavae_dsprites_synth.py .* sets them; add them"),
    ("a stage named twice", MAIN, [CT, "--workdir={w}", "--config.stages=('mcqvae','mcqvae')"],
     r"config.stages \('mcqvae', 'mcqvae'\) names 'mcqvae' twice; name each stage once"),
    ("an empty test split", MAIN, [VAE, "--workdir={w}", "--config.data.split_fractions=(1.0,0.0,0.0)"],
     r"data.split_fractions \(1.0, 0.0, 0.0\) leave the test split of dsprites_synth empty "
     r"\(0 of 737280 images\); every stage scores on it"),
    ("a batch larger than the training split", MAIN,
     [VAE, "--workdir={w}", "--config.vae.optim.batch_size=1000000"],
     r"vae.optim.batch_size = 1000000 is more than the 663552 images of dsprites_synth's "
     r"training split; lower it"),
    ("an evaluation batch larger than the test split", MAIN,
     [VAE, "--workdir={w}", "--config.vae.train.eval_batch_size=1000000"],
     r"vae.train.eval_batch_size = 1000000 is more than the 73728 images of dsprites_synth's "
     r"test split"),
    ("CT-VAE on a dataset whose split is no factor grid", MAIN,
     [CT, "--workdir={w}", "--config.data.name=pendulum"],
     r"for 4 of its 4 actions \(pendulum_angle\+, light_angle\+, pendulum_angle-, "
     r"light_angle-\) no two images of pendulum's test split are one step apart: CT-VAE "
     r"learns transitions along a factor grid"),
    ("a learning curve of no images", MAIN,
     [VAE, "--workdir={w}", "--config.vae.train.num_curve_images=0"],
     r"vae.train.num_curve_images = 0 draws no test items for the learning curve that "
     r"vae.train.eval_every_steps = 2 asks for"),
    ("distributed without its peers", MAIN, [CT, "--workdir={w}", "--distributed"],
     r"--distributed could not start \(coordinator_address should be defined\)\. On TPU VMs"),
    ("distributed coordinator that never answers", MAIN,
     [CT, "--workdir={w}", "--distributed", "--coordinator_address=127.0.0.1:1",
      "--num_processes=2", "--process_id=1", "--distributed_timeout=1"],
     r"--distributed: no coordinator answered at 127.0.0.1:1 in 1 s \(Connection refused\); "
     r"start process 0"),
    ("a SLURM task that never joins", MAIN,
     [CT, "--workdir={w}", "--distributed", "--distributed_timeout=1"],
     r"^error: --distributed: process 1 of 2 did not join in 1 s; check that SLURM starts "
     r"this command in each of its 2 processes", slurm_task(0)),
    ("a SLURM task whose process 0 never starts", MAIN,
     [CT, "--workdir={w}", "--distributed", "--distributed_timeout=1"],
     r"^error: --distributed: no coordinator answered at localhost:\d+ in 1 s "
     r"\(Connection refused\); check that SLURM's process 0 runs this command",
     slurm_task(1)),
    ("a Kubernetes pod that cannot be asked", MAIN,
     [CT, "--workdir={w}", "--distributed", "--distributed_timeout=1"],
     r"^error: --distributed: Kubernetes was detected but could not say where its "
     r"processes are \(ConfigException: Service token file does not exist\); fix its "
     r"set-up, or give every process --coordinator_address",
     {"KUBERNETES_SERVICE_HOST": "10.0.0.1",
      "PYTHONPATH": os.pathsep.join(["{tmp}/outside_a_pod", str(REPO_ROOT)])}),
    ("distributed coordinator without a port", MAIN,
     [CT, "--workdir={w}", "--distributed", "--coordinator_address=localhost",
      "--num_processes=2", "--process_id=0"],
     r"--coordinator_address=localhost is not HOST:PORT"),
    ("process flags without --distributed", MAIN, [CT, "--workdir={w}", "--num_processes=2"],
     r"--num_processes applies only with --distributed; add it, or drop it"),
    ("a platform JAX cannot start", MAIN, [CT, "--workdir={w}"],
     r"JAX cannot start the devices JAX_PLATFORMS='nosuch' asks for \(.*nosuch.*\); install "
     r"JAX for that accelerator", {"JAX_PLATFORMS": "nosuch"}),
    ("stray argument", MAIN, [CT, "--workdir={w}", "extra"],
     r"unexpected arguments extra; every option is a --flag"),
    ("unknown dataset", MAIN, [CT, "--workdir={w}", "--config.data.name=shapes_3d"],
     r"unknown dataset 'shapes_3d'. Did you mean 'shapes3d'\?"),
    ("unknown stage", MAIN, [CT, "--workdir={w}", "--config.stages=('mcqvae','ctt')"],
     r"unknown stage 'ctt' in config.stages"),
    ("split fractions", MAIN, [CT, "--workdir={w}", "--config.data.split_fractions=(0.5,0.6,0.1)"],
     r"data.split_fractions must sum to 1"),
    ("unknown VAE loss", MAIN, [VAE, "--workdir={w}", "--config.vae.objective.name=betavea"],
     r"betavea"),
    ("real dataset not prepared", MAIN,
     [CT, "--workdir={w}", "--config.data.name=shapes3d", "--config.data.data_dir={tmp}"],
     r"shapes3d is not prepared: looked for .*Prepare it with"),
    ("stage 2 without stage 1", MAIN, [CT, "--workdir={w}", "--config.stages=('ct',)"],
     r"no stage-1 \(mcqvae\) checkpoint in .*run stage 'mcqvae' first"),
    ("workdir is a file", MAIN, [CT, "--workdir={tmp}/a_file"],
     r"workdir .*a_file is not writable"),
    ("workdir under a file", MAIN, [CT, "--workdir={tmp}/a_file/run"],
     r"workdir .*a_file/run is not writable"),
    ("evaluating an empty workdir", "causal_disent.evaluate", ["--workdir={tmp}"],
     r"config.json not found: pass the --workdir of a run of causal_disent.main"),
    ("scoring with a negative seed", "causal_disent.evaluate", ["--workdir={tmp}", "--seed=-1"],
     r"flag --seed=-1: -1 is not a non-negative integer"),
    ("evaluating with a stray argument", "causal_disent.evaluate", ["--workdir={tmp}", "x"],
     r"unexpected arguments: x"),
    ("scoring the factors of a real dataset not prepared", "causal_disent.evaluate",
     ["--model=identity", "--dataset=shapes3d", "--data_dir={tmp}/no_data", "--metrics=mig"],
     r"shapes3d is not prepared: looked for .*no_data/shapes3d"),
    ("scoring the factors with a trained run's flag", "causal_disent.evaluate",
     ["--model=random", "--dataset=dsprites_synth", "--representation=all"],
     r"--representation chooses what of a trained run is scored; --model=random scores the "
     r"dataset's factors: drop --representation"),
    ("evaluating with a file as compilation cache", "causal_disent.evaluate",
     ["--workdir={tmp}", "--compilation_cache={tmp}/small.png"],
     r"the compilation cache .*small.png \(--compilation_cache\) cannot be used"),
    ("re-evaluating an empty workdir", MAIN, ["--workdir={tmp}", "--mode=eval"],
     r"config.json not found: pass the --workdir of a run of causal_disent.main"),
    ("re-evaluating an unfinished run", MAIN, ["--workdir={run}", "--mode=eval"],
     r"stage 'mcqvae' in .*run has not finished training \(it has no checkpoint\); finish "
     r"it first by rerunning its training command"),
    ("scoring an unfinished run", "causal_disent.evaluate", ["--workdir={run}"],
     r"stage 'mcqvae' in .*run has not finished training \(it has no checkpoint\); finish "
     r"it first .*, or pass --unfinished to score its latest checkpoints$"),
    ("writing the factors' card as a run's", "causal_disent.evaluate",
     ["--model=identity", "--dataset=dsprites_synth", "--output={run}/metrics_card.json"],
     r"--output=.*run/metrics_card.json would stand as the card of the run in .*run "
     r"\(summarize reads its metrics_card.json as that run's scores\), but this card "
     r"scores --model=identity; pass another --output$"),
    ("a field changed without a config file", MAIN, ["--workdir={run}", "--config.seed=3"],
     r"--config.seed=3 changes a field of the config that --config=FILE.py loads, and there "
     r"is no --config; add the run's config file .*--workdir=W alone resumes the run in W "
     r"with its own config.json, unchanged$"),
    ("an intervention strip where none can be written", "causal_disent.intervene",
     ["--workdir={run}", "--action=0", "--index=0", "--out={tmp}/small.png/strips/a.png"],
     r"small.png/strips cannot be written \(Not a directory\), so no strip can be: give "
     r"--out=FILE.png in a folder you can write to$"),
    ("training inside another run", MAIN, [VAE, "--workdir={started}/checkpoints/mine"],
     r"--workdir=.*started/checkpoints/mine is inside the checkpoints/ folder of the run in "
     r".*started, whose files it would mix with its own; give the run a folder outside any "
     r"other run's$"),
    ("a card written to a folder", "causal_disent.evaluate",
     ["--model=identity", "--dataset=dsprites_synth", "--output={tmp}"],
     r"--output=.* is a folder; give the card's file, e.g. --output=.*/metrics_card.json$"),
    ("redrawing with a config", MAIN, [CT, "--workdir={run}", "--mode=figures"],
     r"--mode=figures uses the run's own config .*; drop --config"),
    ("resuming a run with another seed", MAIN, [CT, "--workdir={started}", "--config.seed=3"],
     r"holds a run of another config: seed is 0 there, 3 here\. Resume it with "
     r"--workdir=.*started alone \(its own config.json\), or train this config in a new "
     r"--workdir$"),
    ("training without a config", MAIN, ["--workdir={w}"],
     r"--config=FILE.py\[:variant\] is required to train"),
    ("intervening with a missing image", "causal_disent.intervene",
     ["--workdir={run}", "--image={tmp}/missing.png", "--action=1"],
     r"--image=.*missing.png: no such file"),
    ("intervening with an image of the wrong size", "causal_disent.intervene",
     ["--workdir={run}", "--image={tmp}/small.png", "--action=1"],
     r"small.png is 32x32 pixels; the run's model takes 64x64: resize it first"),
    ("intervening with an index out of range", "causal_disent.intervene",
     ["--workdir={run}", "--index=480000", "--action=1"],
     r"--index=480000 is out of range: the dataset shapes3d_synth has 480000 images"),
    ("intervening on a workdir without a run", "causal_disent.intervene",
     ["--workdir={tmp}", "--index=0", "--action=1"], r"config.json not found"),
    ("contact sheet to an unwritable path", "causal_disent.data.show",
     ["dsprites_synth", "--out={tmp}/a_file/sheet.png"], r"cannot write .*sheet.png"),
    ("contact sheet not a PNG", "causal_disent.data.show", ["dsprites_synth", "--out={tmp}/x.jpg"],
     r"--out .*x.jpg must name a .png file"),
    ("contact sheet with an unknown flag", "causal_disent.data.show", ["dsprites_synth", "--num=3"],
     r"^error: unrecognized arguments: --num=3 \(see --help\)$"),
    ("a benchmark given a folder without a run", "benchmarks.consistency_scorings",
     ["{tmp}"], r"^error: .*config.json not found: pass the --workdir of a run"),
    ("an empty workdir", MAIN, [VAE, "--workdir="],
     r"^error: flag --workdir=: is empty; give a path$"),
    ("a JAX option's environment variable JAX refuses", MAIN, [VAE, "--workdir={w}"],
     r"^error: the environment variable JAX_DEFAULT_MATMUL_PRECISION='tf32' is not a "
     r"value JAX accepts \(Invalid value \"tf32\" for JAX flag "
     r"jax_default_matmul_precision\); fix it",
     {"JAX_DEFAULT_MATMUL_PRECISION": "tf32"}),
    ("scoring with a JAX switch that is neither on nor off", "causal_disent.evaluate",
     ["--workdir={run}"],
     r"^error: the environment variable JAX_ENABLE_X64='maybe' is not a value JAX accepts",
     {"JAX_ENABLE_X64": "maybe"}),
    ("one's own data at a path that does not exist", MAIN,
     [CT, "--workdir={w}", "--config.data.name=files", "--config.data.path={tmp}/absent.npz"],
     r"^error: .*absent.npz: no such file or folder \(the files dataset's path\)$"),
    ("one's own images and factors of different lengths", MAIN,
     [VAE, "--workdir={w}", "--config.data.name=files", "--config.data.path={own}/lengths.npz"],
     r"^error: files: 256 images but 255 rows of factors; give one row of factors per image$"),
    ("one's own folder of images of different sizes", MAIN,
     [VAE, "--workdir={w}", "--config.data.name=files", "--config.data.path={own}/mixed"],
     r"^error: .*mixed: images of different sizes: img_0000.png is 64x64 and img_0005.png "
     r"is 32x32 \(width x height\); resize them to one size first$"),
    ("CT-VAE on one's own factors that do not fill a grid", MAIN,
     [CT, "--workdir={w}", "--config.data.name=files", "--config.data.path={own}/partial.npz"],
     r"^error: CT-VAE learns from pairs of images one factor step apart, drawn from a full "
     r"factor grid, and files has none \(the labels hold 200 of the 256 combinations of "
     r"the 4x8x8 grid\); list its transition pairs"),
    ("a negative commitment cost", MAIN,
     [CT, "--workdir={w}", "--config.mcqvae.model.commitment_cost=-0.25"],
     r"^error: mcqvae.model.commitment_cost must be >= 0, got -0.25: a loss weight must be "
     r"finite and >= 0$"),
    ("the report with an unknown flag", "report", ["--check"],
     r"^error: unrecognized arguments: --check \(see --help\)$"),
    ("scoring more samples than the host holds", "causal_disent.evaluate",
     ["--model=random", "--dataset=dsprites_synth", "--metrics=mig",
      "--num_samples=10000000000", "--output={tmp}/card.json"],
     r"^error: scoring ran out of the host's memory \(10000000000 points of metric mig need "
     r"about 2607.7 GiB \(3.5 copies of their factors and codes, as measured\), and the host "
     r"has .* GiB available\); lower --num_samples \(10000000000\)"),
]

# What the `kubernetes` package does in a pod without a service account mounted.
_OUTSIDE_A_POD = """
import types

class ConfigException(Exception):
    pass

def _load_incluster_config():
    raise ConfigException("Service token file does not exist.")

config = types.SimpleNamespace(load_incluster_config=_load_incluster_config)
"""

_LOG_LINE = re.compile(r"^([IWEF]\d{4} |WARNING:absl:)")
# evaluate's progress, before the error that ends it
_PROGRESS_LINE = re.compile(r"^scoring representation \w+ on \w+: ")


def run_case(case, root):
    name, module, arguments = case[:3]
    folder = root / re.sub(r"\W+", "_", name)
    folder.mkdir()
    (folder / "a_file").write_text("not a directory")
    (folder / "dict_config.py").write_text("def get_config():\n    return {'stages': ('vae',)}\n")
    for name, change in (("misspelt_config.py", "config.vae.optim.learnin_rate = 1e-3"),
                         ("no_optim_config.py", "del config.vae['optim']")):
        (folder / name).write_text(
            "from configs import betavae_dsprites_synth\n\n\ndef get_config():\n"
            "    config = betavae_dsprites_synth.get_config('tiny')\n"
            f"    {change}\n    return config\n")
    Image.new("RGB", (32, 32)).save(folder / "small.png")
    (folder / "run").mkdir()
    write_config(folder / "run", tiny_config())  # a run that never trained
    (folder / "started" / "checkpoints" / "mcqvae" / "3").mkdir(parents=True)
    write_config(folder / "started", tiny_config())  # a run that has begun
    (folder / "outside_a_pod" / "kubernetes").mkdir(parents=True)
    (folder / "outside_a_pod" / "kubernetes" / "__init__.py").write_text(_OUTSIDE_A_POD)
    own = folder / "own"  # datasets of one's own, written for the cases that read them
    if any("{own}" in argument for argument in arguments):
        own.mkdir()
        arrays = own_data_fixtures.grid_arrays()
        write_npz(own / "lengths.npz", factors=arrays["factors"][:255])
        write_npz(own / "partial.npz", images=arrays["images"][:200],
                  factors=arrays["factors"][:200], labels=arrays["labels"][:200])
        write_image_folder(own / "mixed", count=6, sizes_differ=True)
    before = sorted(folder.rglob("*"))
    args = [a.format(w=folder / "workdir", tmp=folder, run=folder / "run",
                     started=folder / "started", own=own)
            for a in arguments]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "JAX_PLATFORMS": "cpu",
           **{name: value.format(tmp=folder)
              for name, value in (case[4] if len(case) > 4 else {}).items()}}
    # The cases run four at a time, and the worker's compilation cache
    # (tests/conftest.py) writes its entries without a lock.
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    result = subprocess.run([sys.executable, "-m", module, *args], env=env, cwd=REPO_ROOT,
                            capture_output=True, text=True, timeout=300)
    return result, before, sorted(folder.rglob("*"))


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    root = tmp_path_factory.mktemp("bad_input")
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        futures = {case[0]: pool.submit(run_case, case, root) for case in CASES}
        return {name: future.result() for name, future in futures.items()}


def test_the_table_is_long_enough():
    assert len({case[0] for case in CASES}) == len(CASES) >= 20


@pytest.mark.parametrize("case", CASES, ids=[case[0] for case in CASES])
def test_bad_input_is_one_error_line_and_changes_nothing(outcomes, case):
    result, before, after = outcomes[case[0]]
    messages = [line for line in result.stderr.splitlines()
                if not _LOG_LINE.match(line) and not _PROGRESS_LINE.match(line)]
    assert result.returncode == 1, result.stderr[-2000:]
    assert "Traceback" not in result.stderr + result.stdout
    assert messages and messages[0].startswith("error: "), result.stderr[-2000:]
    if "not prepared" not in case[0]:  # those add the commands to run
        assert len(messages) == 1, messages
    assert re.search(case[3], "\n".join(messages), re.DOTALL), messages
    assert after == before  # not even the workdir was created


def test_a_coordinator_port_another_job_holds_is_one_error_line(tmp_path):
    """Process 0 would otherwise crash in XLA's server (a segmentation fault)."""
    with socket.socket() as holder:
        holder.bind(("0.0.0.0", 0))
        holder.listen()
        port = holder.getsockname()[1]
        case = ("coordinator port taken", MAIN,
                [CT, "--workdir={w}", "--distributed", f"--coordinator_address=localhost:{port}",
                 "--num_processes=2", "--process_id=0"])
        result, before, after = run_case(case, tmp_path)
    messages = [line for line in result.stderr.splitlines()
                if not _LOG_LINE.match(line) and not _PROGRESS_LINE.match(line)]
    assert result.returncode == 1 and len(messages) == 1, result.stderr[-2000:]
    assert messages[0] == (f"error: --distributed: process 0 cannot serve the coordinator on "
                           f"port {port} (Address already in use; another job's "
                           f"coordinator?); give every process a --coordinator_address "
                           f"with a free port")
    assert after == before


def test_a_process_that_never_joins_is_one_error_line_in_process_0(tmp_path):
    """JAX's coordinator would end process 0 with a fatal log and a C++ stack trace."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    case = ("a process never joins", MAIN,
            [CT, "--workdir={w}", "--distributed", f"--coordinator_address=localhost:{port}",
             "--num_processes=3", "--process_id=0", "--distributed_timeout=1"])
    result, before, after = run_case(case, tmp_path)
    messages = [line for line in result.stderr.splitlines()
                if not _LOG_LINE.match(line) and not _PROGRESS_LINE.match(line)]
    assert result.returncode == 1 and len(messages) == 1, result.stderr[-2000:]
    assert messages[0] == (
        "error: --distributed: processes 1 and 2 of 3 did not join in 1 s; start every "
        "process with the same --coordinator_address and --num_processes=3 and its own "
        "--process_id (0 to 2), or raise --distributed_timeout")
    assert after == before
