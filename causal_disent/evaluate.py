r"""Writes a metric card: every disentanglement score, with its settings and timings.

  python -m causal_disent.evaluate --workdir=W --metrics=all
      scores the trained run in W (its latest checkpoint) -> W/metrics_card.json
  python -m causal_disent.evaluate --model=identity --dataset=dsprites_synth --metrics=all
  python -m causal_disent.evaluate --model=random --dataset=dsprites_synth --metrics=all
      score the ground-truth factors (the ceiling) / a random projection of them (the
      floor) -> metrics_card_<model>_<dataset>.json, or --output

--record=results/<name>.json also writes the card as a record, with this command
(causal_disent/runs/records.py). Compiled programs are kept between commands as by
causal_disent.main (--compilation_cache, utils/compilation_cache.py). Options: --metrics=mig,dci,... (names in `evaluation.card.METRICS`),
--num_samples (each metric's training points; test sets are half: the reference
10 000 / 5 000 by default), --seed, --representation (a trained run's: its default,
a name, or all; MCQ-VAE/CT-VAE runs have code_indices and codebook_vectors,
CausalVAE runs encoder_mean and concepts). See `evaluation/card.py`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from absl import app, flags, logging

from causal_disent import cli

_WORKDIR = flags.DEFINE(cli.PathParser(), "workdir", None,
                        "A finished run of causal_disent.main.")
_MODEL = flags.DEFINE_enum(
    "model", "trained", ["trained", "identity", "random"],
    "trained: the run in --workdir; identity / random: the ground-truth factors / a "
    "random projection of them, on --dataset.")
_DATASET = flags.DEFINE_string(
    "dataset", None, "Dataset name (identity / random; default: the run's).")
_DATA_DIR = flags.DEFINE_string("data_dir", "", "Where real (TFDS) datasets are read from.")
_DATA_PATH = flags.DEFINE_string("data_path", "", "--dataset=files: the file or folder of "
                                 "one's own dataset (docs/own_data.md).")
_METRICS = flags.DEFINE_string("metrics", "all", "'all' or a comma-separated list.")
_REPRESENTATION = flags.DEFINE_string(
    "representation", "default", "A trained run's representation: default, a name, or all.")
_NUM_SAMPLES = flags.DEFINE_integer("num_samples", 10_000, "Training points per metric.")
_SEED = flags.DEFINE_integer("seed", 0, "Seed of every metric's sampling and classifiers.",
                             lower_bound=0)
_RECORD = flags.DEFINE_string(
    "record", None,
    "Also write a record (results/<name>.json, causal_disent/runs/records.py): this "
    "command, commit, machine, date, wall time and the card, with the workdir's history.")
_COMPILATION_CACHE = flags.DEFINE_string(
    "compilation_cache", None,
    "Folder of the persistent cache of compiled programs, shared with causal_disent.main "
    "(default: $CAUSAL_DISENT_COMPILATION_CACHE, else ~/.cache/causal_disent/compiled/"
    "<machine>); 'off' compiles everything afresh.")
_UNFINISHED = flags.DEFINE_bool(
    "unfinished", False,
    "Score a run whose training has not finished (preempted, paused, or still training) "
    "from its latest checkpoints; the card records their steps and `finished: false`.")
_OUTPUT = flags.DEFINE(
    cli.PathParser(), "output", None,
    "Card path. Default: WORKDIR/metrics_card.json for a trained run; "
    "metrics_card_<model>_<dataset>.json here for identity and random (never a run's "
    "card: summarize would read it as the run's scores).")


def main(argv) -> None:
    if len(argv) > 1:
        sys.exit(f"error: unexpected arguments: {' '.join(argv[1:])}")
    cli.import_jax_or_exit()
    cli.stop_at_once_on_signals("no metrics card was written (a card already at the "
                                "output path is intact)")
    import jax

    from causal_disent.data.tfds_reading import DatasetNotPreparedError
    from causal_disent.runs import records
    from causal_disent.runs import orbax_noise
    from causal_disent.runs.checkpoint import CheckpointError
    from causal_disent.train import out_of_memory
    from causal_disent.utils import compilation_cache, console, json_values

    orbax_noise.quiet_console()
    console.quiet_stderr()  # JAX's backend probe and other INFO lines: not for the user
    cli.start_devices_or_exit()
    try:  # RecordError and CacheFolderError are ValueErrors
        compilation_cache.enable(_COMPILATION_CACHE.value)
        recorder = records.Recorder("-m causal_disent.evaluate", _RECORD.value)
        check_output()
        card, output = build_card()
    except (ValueError, CheckpointError, DatasetNotPreparedError) as error:  # bad flags,
        sys.exit(f"error: {error}")  # unusable runs, a real dataset not prepared: say why
    except (MemoryError, jax.errors.JaxRuntimeError) as error:
        if not out_of_memory.is_out_of_memory(error):
            raise
        sys.exit(f"error: scoring ran out of {out_of_memory.what_ran_out(error)}; lower "
                 f"--num_samples ({_NUM_SAMPLES.value}), or score fewer --metrics at once")
    text = json_values.dumps(card, indent=2) + "\n"
    try:  # whole or not at all: a card there before stays intact
        output.parent.mkdir(parents=True, exist_ok=True)
        partial = output.with_name(output.name + ".tmp")
        partial.write_text(text)
        partial.replace(output)
    except OSError as error:  # a full disk after minutes of scoring: keep the scores
        partial.unlink(missing_ok=True)
        print(text, end="")
        sys.exit(f"error: cannot write the metrics card {output} ({error.strerror or error}); "
                 f"the card is printed above: free space or pass another --output, or keep "
                 f"the printed card")
    print(summary(card))
    print(f"metrics card: {output.absolute()}")
    runs = [records.workdir_history(_WORKDIR.value)] if _WORKDIR.value else None
    records.write_or_exit(recorder, card, runs=runs)


def _progress(line: str) -> None:
    logging.info("%s", line.strip())
    print(line, file=sys.stderr, flush=True)


def build_card() -> tuple[dict, Path]:
    # Imported here so that --help answers before JAX starts.
    from causal_disent.data import registry
    from causal_disent.evaluation import card as cards
    from causal_disent.evaluation import representations, trained_runs
    from causal_disent.evaluation.card_summary import CARD_FILE
    from causal_disent.train import stages

    names = cards.parse_metric_names(_METRICS.value)
    workdir = Path(_WORKDIR.value) if _WORKDIR.value else None
    result = {"model": _MODEL.value, "workdir": str(workdir.absolute()) if workdir else None}
    if _MODEL.value == "trained":
        if workdir is None:
            raise ValueError("--model=trained needs --workdir=DIR of a finished run "
                             "(or use --model=identity / random with --dataset)")
        from causal_disent.utils.sharding import make_data_mesh

        run, progress = stages.open_scored_run(workdir, make_data_mesh(), _UNFINISHED.value)
        if progress.get("finished") is False:
            _progress(f"warning: {progress['unfinished']}; scoring its latest checkpoints "
                      f"(the card says finished: false)")
        result.update(progress)
        dataset = run.dataset
        if _DATASET.value and _DATASET.value != dataset.name:
            raise ValueError(f"--dataset={_DATASET.value} but the run was trained on "
                             f"{dataset.name}; leave --dataset out for a trained run")
        chosen = choose_representations(run.representations, _REPRESENTATION.value)
        result["family"] = run.family
        scored = {name: representations.CachedCodes(dataset, rep) for name, rep in chosen}
        no_grid = cards.factor_grid_missing(dataset)
        if no_grid:  # no metric card, but the run's own scores (below) still apply
            logging.warning("no metric card: %s", no_grid)
            result["metrics_skipped"], scored = no_grid, {}
    else:
        for flag, given in (("representation", _REPRESENTATION.value != "default"),
                            ("unfinished", _UNFINISHED.value)):
            if given:
                raise ValueError(f"--{flag} chooses what of a trained run is scored; "
                                 f"--model={_MODEL.value} scores the dataset's factors: "
                                 f"drop --{flag}")
        if _DATASET.value is None and workdir is not None:
            dataset = registry.dataset_from_config(trained_runs.load_config(workdir).data)
        elif _DATASET.value is None:
            raise ValueError(f"--model={_MODEL.value} needs --dataset=NAME (one of "
                             f"{', '.join(registry.DATASETS)})")
        else:
            dataset = registry.get_dataset(_DATASET.value, _DATA_DIR.value or None,
                                           path=_DATA_PATH.value or None)
        no_grid = cards.factor_grid_missing(dataset)
        if no_grid:
            raise ValueError(f"--model={_MODEL.value} is built from ground-truth factors: "
                             f"{no_grid}")
        rep = (representations.identity_representation(dataset) if _MODEL.value == "identity"
               else representations.random_representation(dataset, seed=_SEED.value))
        scored = {rep.name: rep}
    result["dataset"] = dataset.name
    result["representations"] = {}
    if scored:
        all_names = names
        names = cards.metrics_for(dataset, names, _METRICS.value.strip() == "all")
        if skipped := [name for name in all_names if name not in names]:
            result["metrics_not_run"] = cards.grid_metrics_refused(dataset, skipped)
            _progress(f"not run: {result['metrics_not_run']}")
    for name, rep in scored.items():
        # Progress on stderr (stdout holds the card when it cannot be written): on a CPU
        # a card can take minutes, most of them DCI's boosted trees.
        _progress(f"scoring representation {name} on {dataset.name}: {', '.join(names)} "
                  f"({_NUM_SAMPLES.value} points each)")
        result["representations"][name] = cards.metric_card(
            dataset, rep, names, _NUM_SAMPLES.value, _SEED.value,
            log=lambda line: _progress(f"  {line}"))
        if isinstance(rep, representations.CachedCodes):
            result["representations"][name]["images_encoded"] = rep.images_encoded
    if _MODEL.value == "trained":
        result["causal"] = cards.to_json(run.causal_scores())
    output = Path(_OUTPUT.value) if _OUTPUT.value else (
        workdir / CARD_FILE if _MODEL.value == "trained"
        else Path(f"metrics_card_{_MODEL.value}_{dataset.name}.json"))
    return result, output


def check_output() -> None:
    """ValueError, before any scoring, for an --output that would pass as the card of a
    run it does not score: summarize reads a run folder's metrics_card.json as that
    run's scores (an identity card written there had shown the factors' MIG as the
    trained model's)."""
    from causal_disent.evaluation.card_summary import CARD_FILE

    if not _OUTPUT.value:
        return
    output = Path(os.path.abspath(_OUTPUT.value))
    if output.is_dir():  # found only once the card is scored, minutes later
        raise ValueError(f"--output={_OUTPUT.value} is a folder; give the card's file, "
                         f"e.g. --output={output / CARD_FILE}")
    run = output.parent
    if output.name != CARD_FILE or not (run / "config.json").is_file():
        return
    if _MODEL.value == "trained":
        workdir = Path(_WORKDIR.value).absolute() if _WORKDIR.value else None
        if workdir is None or workdir.resolve() == run.resolve():
            return  # its own card (or no run at all: build_card says so)
        scored = f"the run in {workdir}"
    else:
        scored = f"--model={_MODEL.value}"
    raise ValueError(f"--output={_OUTPUT.value} would stand as the card of the run in {run} "
                     f"(summarize reads its {CARD_FILE} as that run's scores), but this card "
                     f"scores {scored}; pass another --output")


def choose_representations(available: dict, argument: str) -> list:
    """[(name, representation)]: the run's first one for "default", all, or one."""
    if argument == "default":
        return [next(iter(available.items()))]
    if argument == "all":
        return list(available.items())
    if argument not in available:
        raise ValueError(f"unknown --representation={argument}; this run has: default, all, "
                         f"{', '.join(available)}")
    return [(argument, available[argument])]


def summary(card: dict) -> str:
    from causal_disent.evaluation.card import headline

    lines = [f"{card['model']} on {card['dataset']}"]
    if card.get("finished") is False:
        steps = ", ".join(f"{stage} at step {step}"
                          for stage, step in card["checkpoint_steps"].items())
        lines.append(f"  an unfinished run, scored from its latest checkpoints: {steps}")
    if card.get("metrics_skipped"):
        lines.append(f"  no metric card: {card['metrics_skipped']}")
    for rep_name, rep_card in card["representations"].items():
        lines.append(f"  representation {rep_name} ({rep_card['total_seconds']:.0f} s):")
        for name, entry in rep_card["metrics"].items():
            lines.append(f"    {name:24s} {headline(name, entry['scores'])}  "
                         f"[{entry['seconds']:.1f} s]")
    causal = card.get("causal") or {}
    shown = {key: causal[key] for key in ("mic", "tic", "shd", "action_accuracy",
                                          "factor_accuracy") if key in causal}
    if shown:
        lines.append(f"  causal: {shown}")
    return "\n".join(lines)


if __name__ == "__main__":
    app.run(main, flags_parser=cli.parse_flags_or_exit)
