"""The launchers in launch/: valid bash, the TPU script's gcloud commands (its dry
run) and the GPU zoo's order of runs (with a fake python). local_multiprocess.sh
runs for real in tests/train/test_multiprocess.py; SLURM, Cloud TPUs and GPUs are
not available to the tests."""

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tests.helpers import REPO_ROOT

SCRIPTS = sorted((REPO_ROOT / "launch").iterdir())


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.name for s in SCRIPTS])
def test_launcher_is_valid_bash(script):
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0


def test_tpu_script_creates_runs_on_every_worker_and_deletes():
    env = dict(os.environ, DRY_RUN="1", CREATE="1", DELETE="1", SPOT="1", PROJECT="p",
               ACCELERATOR_TYPE="v4-32", TPU_NAME="slice", ZONE="us-central2-b",
               WORKDIR="/mnt/shared/run", REPO_URL="https://example.org/repo.git", REF="abc123")
    result = subprocess.run(["bash", str(REPO_ROOT / "launch" / "tpu_pod.sh"),
                             "configs/ctvae_shapes3d.py", "--config.seed=1"],
                            env=env, capture_output=True, text=True, cwd=REPO_ROOT)
    assert result.returncode == 0, result.stderr
    create, ssh, delete = result.stdout.strip().splitlines()
    assert create == ("gcloud compute tpus tpu-vm create slice --zone=us-central2-b --project=p "
                      "--accelerator-type=v4-32 --version=tpu-ubuntu2204-base --spot")
    assert ssh.startswith("gcloud compute tpus tpu-vm ssh slice --zone=us-central2-b --project=p "
                          "--worker=all")
    assert "--workdir=\\'/mnt/shared/run\\' --distributed --config.seed=1" in ssh
    assert "git checkout -q \\'abc123\\'" in ssh
    assert delete == "gcloud compute tpus tpu-vm delete slice --zone=us-central2-b --project=p --quiet"


def test_tpu_script_needs_its_settings():
    env = {key: value for key, value in os.environ.items() if key not in {"TPU_NAME", "ZONE"}}
    result = subprocess.run(["bash", str(REPO_ROOT / "launch" / "tpu_pod.sh"), "c.py"],
                            env=env, capture_output=True, text=True, cwd=REPO_ROOT)
    assert result.returncode != 0 and "set TPU_NAME" in result.stderr


FAKE_PYTHON = r"""#!/usr/bin/env bash
# Stands in for python in launch/gpu_zoo.sh: logs each command and leaves the files
# the real one would (a training run pauses once when PAUSE_FIRST is set).
echo "$2 ${*:3}" >> "$LOG"
value() { for a in "$@"; do [[ "$a" == --$1=* ]] && echo "${a#--$1=}"; done; return 0; }
case "$2" in
  causal_disent.main)
    w="$(value workdir "$@")"
    echo "main $w" >> "$LOG.ends"
    if [[ -n "${PAUSE_FIRST:-}" && ! -e "$w/.paused" ]]; then mkdir -p "$w"; touch "$w/.paused"; exit 3; fi
    mkdir -p "$w"/seeds/seed_{0,1,2} ;;
  causal_disent.evaluate)
    w="$(value workdir "$@")"
    sleep "${CARD_SECONDS:-0}"
    [[ "$w" == *"${FAIL_CARD:-no such seed}" ]] && exit 1
    touch "$w/metrics_card.json"
    echo "card $w" >> "$LOG.ends" ;;
  causal_disent.summarize) touch "$(value record "$@")" ;;
esac
"""


def run_zoo(tmp_path, *args, **env):
    """launch/gpu_zoo.sh with FAKE_PYTHON: its exit status and the commands it ran
    ("main --workdir=... ...")."""
    fake = tmp_path / "fake_python"
    fake.write_text(FAKE_PYTHON)
    fake.chmod(0o755)
    env = {**os.environ, "ROOT": str(tmp_path / "zoo"), "STEPS": "30000",
           "RECORDS": str(tmp_path / "records"), "PYTHON": str(fake),
           "LOG": str(tmp_path / "log"), "MODELS": "betavae factorvae", **env}
    (tmp_path / "records").mkdir(exist_ok=True)
    result = subprocess.run(["bash", str(REPO_ROOT / "launch" / "gpu_zoo.sh"), *args],
                            env=env, capture_output=True, text=True)
    log = tmp_path / "log"
    commands = log.read_text().splitlines() if log.exists() else []
    log.unlink(missing_ok=True)
    return result, [command.removeprefix("causal_disent.") for command in commands]


def programs(commands):
    return [command.split()[0] for command in commands]


def in_order_of_models(commands):
    """The zoo's commands, each model's together in MODELS order (its cards run in
    the background, beside the next model's training)."""
    return sorted(commands, key=lambda command: "factorvae" in command)


def test_the_gpu_zoo_resumes_where_a_slice_stopped_and_redoes_nothing(tmp_path):
    result, commands = run_zoo(tmp_path, "--config.seed=4", PAUSE_FIRST="1")
    assert (result.returncode, programs(commands)) == (3, ["main"])  # time spent: rerun
    assert (f"--workdir={tmp_path}/zoo/betavae" in commands[0]
            and "--config.num_seeds=3 --config.vae.train.num_steps=30000" in commands[0]
            and commands[0].endswith("--config.seed=4"))
    result, commands = run_zoo(tmp_path, "--config.seed=4")
    assert result.returncode == 0, result.stderr
    assert programs(commands[-2:]) == ["summarize"] * 2  # once every card is written
    assert programs(in_order_of_models(commands[:-2])) == ["main"] + ["evaluate"] * 3 + [
        "main"] + ["evaluate"] * 3
    assert sorted(path.name for path in (tmp_path / "records").iterdir()) == [
        "zoo_dsprites_synth_gpu_betavae.json", "zoo_dsprites_synth_gpu_factorvae.json"]
    assert run_zoo(tmp_path)[1] == []  # all done: nothing runs again


def test_the_gpu_zoo_scores_a_model_while_the_next_trains(tmp_path):
    result, commands = run_zoo(tmp_path, CARD_SECONDS="1", CARD_JOBS="3")
    assert result.returncode == 0, result.stderr
    # When each training started and each card ended: factorvae's training started
    # while betavae's three cards were running.
    events = [line.split()[0] for line in (tmp_path / "log.ends").read_text().splitlines()]
    assert events == ["main", "main"] + ["card"] * 6
    # betavae's three cards start in the background, so under load the next training
    # may log its start before the last of them does.
    assert programs(commands[:1]) == ["main"]
    assert sorted(programs(commands[1:5])) == ["evaluate", "evaluate", "evaluate", "main"]


def test_a_card_that_would_outlast_the_slice_waits_for_the_next(tmp_path):
    result, commands = run_zoo(tmp_path, MODELS="betavae", CARD_MINUTES="20")
    assert (result.returncode, programs(commands)) == (3, ["main"])
    result, commands = run_zoo(tmp_path, MODELS="betavae")
    assert (result.returncode, programs(commands)) == (0, ["evaluate"] * 3 + ["summarize"])


def test_a_failed_card_stops_the_gpu_zoo_before_its_model_is_summarised(tmp_path):
    result, commands = run_zoo(tmp_path, MODELS="betavae", FAIL_CARD="seed_1")
    assert result.returncode == 1
    assert f"error: the metric card of {tmp_path}/zoo/betavae/seeds/seed_1 failed" in (
        result.stderr)
    assert "summarize" not in programs(commands)
    assert not (tmp_path / "records" / "zoo_dsprites_synth_gpu_betavae.json").exists()
    result, commands = run_zoo(tmp_path, MODELS="betavae")  # the next slice: that card
    assert (result.returncode, programs(commands)) == (0, ["evaluate", "summarize"])


def test_the_gpu_zoo_until_done_goes_on_after_a_paused_slice(tmp_path):
    result, commands = run_zoo(tmp_path, "--until-done", MODELS="ivae", PAUSE_FIRST="1")
    assert result.returncode == 0, result.stderr
    assert programs(commands) == ["main", "main", "evaluate", "evaluate", "evaluate",
                                  "summarize"]


def test_the_gpu_zoo_refuses_an_unknown_model_and_a_spent_slice_runs_nothing(tmp_path):
    result, commands = run_zoo(tmp_path, MODELS="betavae nosuchvae")
    assert (result.returncode, commands) == (2, [])
    assert "error: unknown model 'nosuchvae' in MODELS" in result.stderr
    result, commands = run_zoo(tmp_path, MAX_MINUTES="0")
    assert (result.returncode, commands) == (3, [])


# A python that logs its arguments; run as benchmarks/seed_stacking.py it writes a record
# whose stacked step takes $STEP_<execution> seconds; its launcher's inline scripts
# ("-") run on the real python.
LOOP_FAKE_PYTHON = r"""#!/usr/bin/env bash
echo "$*${XLA_FLAGS:+ (XLA_FLAGS:$XLA_FLAGS)}${JAX_LOG_COMPILES:+ (JAX_LOG_COMPILES)}" >> "$LOG"
if [[ $1 == - ]]; then exec "$REAL_PYTHON" "$@"; fi
if [[ $1 == benchmarks/seed_stacking.py ]]; then
  for arg in "$@"; do
    case $arg in --execution=*) execution=${arg#*=};; --record=*) record=${arg#*=};; esac
  done
  seconds_var="STEP_${execution}"
  echo "{\"figures\": {\"stacked\": {\"step_s\": ${!seconds_var}}}}" > "$record"
fi
if [[ $1 == benchmarks/seed_stacking_runs.py ]]; then  # a stacked run's log, one long line
  for arg in "$@"; do case $arg in --root=*) root=${arg#*=};; esac; done
  mkdir -p "$root/stacked" && printf '2026-11-28 10:00:00,000 INFO %0200d\n' 0 > "$root/stacked/log.txt"
fi
"""


def run_gpu_loop_benchmarks(tmp_path, budget: int, vmap_s: float = 0.0066,
                            vmap_matmul_s: float = 0.009, **extra_env: str):
    """launch/gpu_loop_benchmarks.sh with LOOP_FAKE_PYTHON, the stacked step taking `vmap_s`
    and `vmap_matmul_s` seconds by each execution: the script's timeline lines, the
    benchmarks it started and the log of every command."""
    fake = tmp_path / "fake_python"
    fake.write_text(LOOP_FAKE_PYTHON)
    fake.chmod(0o755)
    out = tmp_path / "out"
    env = {**os.environ, "OUT": str(out), "BUDGET": str(budget), "PYTHON": str(fake),
           "PARTS": str(tmp_path / "parts"), "RUNS": str(tmp_path / "runs"),
           "TRACES": str(tmp_path / "traces"),
           "LOG": str(tmp_path / "log"),
           "REAL_PYTHON": sys.executable,
           "STEP_vmap": str(vmap_s), "STEP_vmap_matmul": str(vmap_matmul_s), **extra_env}
    result = subprocess.run(["bash", str(REPO_ROOT / "launch" / "gpu_loop_benchmarks.sh")],
                            env=env, capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    started = [line.split()[0] for line in (tmp_path / "log").read_text().splitlines()
               if line.startswith("benchmarks/")]
    return (out / "timeline.txt").read_text().splitlines(), started, tmp_path / "log"


def test_the_gpu_loop_benchmarks_run_in_order_each_with_its_record(tmp_path):
    timeline, started, log = run_gpu_loop_benchmarks(tmp_path, budget=560)
    assert started == ["benchmarks/loop_overhead.py"] * 3 + [
        "benchmarks/seed_stacking.py"] * 2 + ["benchmarks/loop_overhead.py"] + [
        "benchmarks/seed_stacking_runs.py"] + ["benchmarks/loop_overhead.py"] * 2 + [
        "benchmarks/first_state_compilation.py", "benchmarks/loop_overhead.py"]
    assert [line.split(":")[0] for line in timeline] == [
        "machine.txt", "loop_overhead_s1", "loop_overhead_s1_unrolled",
        "loop_overhead_s1_profile", "seed_stacking_step_vmap",
        "seed_stacking_step_vmap_matmul", "stacked seeds run as vmap",
        "loop_overhead_s8_unrolled", "seed_stacking_runs", "seed_stacking_runs logs",
        "loop_overhead_s1_command_buffer", "loop_overhead_s8", "first_state_compilation",
        "loop_overhead_ct_cache"]
    commands = log.read_text().splitlines()
    assert [(command.split("--cases=")[1].split()[0],
             command.split("--unroll_call=")[1].split()[0] if "--unroll_call" in command
             else "as configured")
            for command in commands if command.startswith("benchmarks/loop_overhead.py")] == [
        ("betavae", "off"), ("betavae", "on"), ("betavae", "off"), ("betavae_s8", "on"),
        ("betavae", "off"), ("betavae_s8", "off"), ("ct_cache", "as configured")]
    # Only the profile part traces, into TRACES (not packed: megabytes).
    traced = [command for command in commands if "--profile=" in command]
    assert len(traced) == 1 and "--steps=500" in traced[0] and "s1_profile" in traced[0]
    assert f"--profile={tmp_path}/traces " in traced[0]
    # Only the command-buffer part runs with XLA's command buffers holding loops.
    flagged = [command for command in commands if "enable_command_buffer" in command]
    assert len(flagged) == 1 and "--record=" in flagged[0] and "s1_command_buffer" in flagged[0]
    assert flagged[0].endswith("--xla_gpu_enable_command_buffer=+WHILE,+CONDITIONAL)")
    stacking = next(command for command in commands if "seed_stacking_runs" in command)
    assert f"--record={tmp_path}/parts/seed_stacking_runs_record.json" in stacking
    # Only the whole runs log their compilations (each part's compile seconds).
    assert [command for command in commands if "(JAX_LOG_COMPILES)" in command] == [stacking]
    assert ("--sequential_runs=2 --config.vae.train.steps_per_call=10 "
            "--config.vae.train.device_data=on --config.vae.train.unroll_call=on "
            "--config.seed_execution=vmap") in stacking


def test_the_gpu_loop_benchmarks_leave_two_files_holding_every_part(tmp_path):
    """The device tool brings back 8 files at most: OUT gets the timeline and one
    archive of every part's files, packed again after each part."""
    run_gpu_loop_benchmarks(tmp_path, budget=560)
    out = tmp_path / "out"
    assert sorted(path.name for path in out.iterdir()) == [
        "gpu_loop_benchmarks.tar.gz", "timeline.txt"]
    with tarfile.open(out / "gpu_loop_benchmarks.tar.gz") as archive:
        packed = sorted(Path(name).name for name in archive.getnames() if name != ".")
    assert packed == sorted(path.name for path in (tmp_path / "parts").iterdir())
    assert {"machine.txt", "timeline.txt", "seed_stacking_step_vmap_record.json",
            "seed_stacking_step_vmap_matmul_record.json",
            "seed_stacking_runs_log_stacked.txt"} <= set(packed)
    # The stacked run's log, its lines cut to 160 characters.
    log = (tmp_path / "parts" / "seed_stacking_runs_log_stacked.txt").read_text()
    assert [len(line) for line in log.splitlines()] == [160]


def test_the_faster_stacked_step_runs_the_stacked_seeds(tmp_path):
    timeline, _, log = run_gpu_loop_benchmarks(tmp_path, budget=560, vmap_s=0.0066,
                                               vmap_matmul_s=0.0021)
    assert "stacked seeds run as vmap_matmul" in timeline
    commands = log.read_text().splitlines()
    assert [command.split("--cases=")[1].split()[0] for command in commands
            if "--cases=betavae_s8" in command] == ["betavae_s8_matmul"] * 2
    stacking = next(command for command in commands if "seed_stacking_runs" in command)
    assert "--config.seed_execution=vmap_matmul" in stacking.split()


def test_a_part_without_time_left_is_skipped_and_said(tmp_path):
    # 25 s: the stacking runs would get 15 s (the budget less 10 for what follows).
    timeline, started, _ = run_gpu_loop_benchmarks(tmp_path, budget=25)
    assert "benchmarks/seed_stacking_runs.py" not in started
    assert any(line.startswith("seed_stacking_runs: skipped") for line in timeline)


def test_a_preflight_runs_every_part_for_a_few_steps_whatever_the_budget(tmp_path):
    timeline, started, log = run_gpu_loop_benchmarks(tmp_path, budget=25, PREFLIGHT="1")
    assert len(started) == 11 and not any("skipped" in line for line in timeline)
    commands = [command for command in log.read_text().splitlines()
                if command.startswith("benchmarks/")]
    steps = [command.split("--steps=")[1].split()[0] for command in commands
             if "--steps=" in command]
    assert steps == ["20", "20", "20", "3", "3", "20", "20", "20", "20"]
    stacking = next(command for command in commands if "seed_stacking_runs" in command)
    # Its flags come after the measurement's, which they override.
    assert stacking.split("--record=")[0].endswith(
        "--seeds=2 --sequential_runs=1 --config.vae.train.num_steps=20 ")


def test_local_multiprocess_refuses_bad_counts_and_names_the_failed_process(tmp_path):
    """Its two counts checked before anything starts; a process that fails is named
    with its own `error:` line and its log (the others' go on to their end)."""
    launcher = str(REPO_ROOT / "launch" / "local_multiprocess.sh")
    fake = tmp_path / "fake_python"  # process 1 fails as causal_disent.main would
    fake.write_text('#!/usr/bin/env bash\n[[ "$1" == -c ]] && exec python3 "$@"\n'
                    'for a in "$@"; do [[ "$a" == --process_id=1 ]] && '
                    '{ echo "I0 starting"; echo "error: stage vae cannot start"; exit 1; }; done\n'
                    'exit 0\n')
    fake.chmod(0o755)
    env = {**os.environ, "PYTHON": str(fake)}
    workdir = f"--workdir={tmp_path / 'run'}"
    for counts, named in ((["0", "2"], "NUM_PROCESSES is '0'"),
                          (["two", "2"], "NUM_PROCESSES is 'two'"),
                          (["2", "x"], "DEVICES_PER_PROCESS is 'x'")):
        result = subprocess.run(["bash", launcher, *counts, workdir], env=env,
                                capture_output=True, text=True)
        assert result.returncode == 1 and result.stderr.startswith(f"error: {named}")
    result = subprocess.run(["bash", launcher, "3", "", workdir], env=env,
                            capture_output=True, text=True)
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"error: process 1 of 3 exited with status 1: stage vae cannot start "
        f"(its log: {tmp_path / 'run'}.process_1.log)")


def test_local_multiprocess_names_the_process_that_ended_first_and_its_signal(tmp_path):
    """A process killed mid-run makes JAX abort its peers ("Terminating process because
    the JAX distributed service detected fatal errors", status 134, a stack trace after
    it): the process that ended first is named, with the signal that ended it."""
    launcher = str(REPO_ROOT / "launch" / "local_multiprocess.sh")
    fatal = ("F1205 19:10:25.455104   12767 client.h:80] Terminating process because the "
             "JAX distributed service detected fatal errors.")
    workdir = f"--workdir={tmp_path / 'run'}"

    def launch(process_1: str) -> str:
        fake = tmp_path / "fake_python"  # process 0 aborts as JAX makes it, after 1 ended
        fake.write_text('#!/usr/bin/env bash\n[[ "$1" == -c ]] && exec python3 "$@"\n'
                        'for a in "$@"; do [[ "$a" == --process_id=1 ]] && '
                        f'{{ {process_1}; }}; done\n'
                        f'sleep 1; echo "[vae] step 3"; echo "{fatal}"; echo "    @ 0x1 f()"; '
                        'kill -ABRT $$\n')
        fake.chmod(0o755)
        result = subprocess.run(["bash", launcher, "2", "", workdir],
                                env={**os.environ, "PYTHON": str(fake)},
                                capture_output=True, text=True)
        return result.returncode, result.stderr.strip().splitlines()

    assert launch("echo '[vae] step 2'; kill -KILL $$") == (
        137, [f"error: process 1 of 2 exited with status 137: ended by SIGKILL "
              f"(its log: {tmp_path / 'run'}.process_1.log)"])
    assert launch("exit 0") == (
        134, [f"error: process 0 of 2 exited with status 134: ended by SIGABRT: Terminating "
              f"process because the JAX distributed service detected fatal errors. "
              f"(its log: {tmp_path / 'run'}.process_0.log)"])


REPRODUCE_FAKE_PYTHON = r"""#!/usr/bin/env bash
# Stands in for python in launch/gpu_reproduce.sh: the first slice pauses with the
# files a run has by then, the second finishes.
for a in "$@"; do [[ "$a" == --workdir=* ]] && w="${a#--workdir=}"; done
mkdir -p "$w/checkpoints/ct" "$w/curves"
echo '{"stage": "ct", "step": 1}' >> "$w/metrics.jsonl"
echo '{}' > "$w/config.json"; echo step > "$w/curves/ct.jsonl"
if [[ ! -e "$w/.paused" ]]; then touch "$w/.paused"; exit 3; fi
echo '{"ct": {"densities": {}}}' > "$w/results.json"
"""


def test_the_reproduction_keeps_the_runs_records_after_every_slice(tmp_path):
    fake = tmp_path / "fake_python"
    fake.write_text(REPRODUCE_FAKE_PYTHON)
    fake.chmod(0o755)
    keep = tmp_path / "kept"
    env = {**os.environ, "WORKDIR": str(tmp_path / "run"), "PYTHON": str(fake),
           "KEEP": str(keep)}
    script = str(REPO_ROOT / "launch" / "gpu_reproduce.sh")
    paused = subprocess.run(["bash", script], env=env, capture_output=True, text=True)
    assert paused.returncode == 3, paused.stderr
    assert sorted(p.name for p in keep.iterdir()) == ["config.json", "curves", "metrics.jsonl"]
    done = subprocess.run(["bash", script, "--until-done"], env=env, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    assert (keep / "results.json").exists() and not (keep / "checkpoints").exists()
    assert len((keep / "metrics.jsonl").read_text().splitlines()) == 2
