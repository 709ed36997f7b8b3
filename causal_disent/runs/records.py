"""Records of reported experiments: results/<name>.json, one per table-worthy run.

A record is written by the command that produced its figures (`--record=PATH` of
`causal_disent.main`, `summarize`, `evaluate` and the benchmarks), never by hand, and
holds what a reader needs to trust and redo it:

  command        the shell line that wrote the record (interpreter as typed)
  commit         the repository's HEAD when it ran ("+dirty" when the tree had changes)
  machine        CPU model and cores, JAX platform and devices, memory
  date           UTC start of the command
  wall_seconds   the command's own wall time
  figures        its outputs (results.json of a run, a benchmark's summary, ...)
  runs           for records about finished workdirs: each one's history (the commands
                 that trained it, their dates, commit and machine where the workdir
                 kept them, and the time its log spans)

The report (`python -m report`, report/ beside results/) renders the README's and
docs/' results tables from these files, and a test holds the Markdown to them. Summaries only: no checkpoint, image
or dataset belongs in a record.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

from causal_disent.runs import seeds
from causal_disent.utils import json_values

REPO_ROOT = Path(__file__).resolve().parents[2]
PROVENANCE_FILE = "provenance.jsonl"  # one line per command run on a workdir
_LOG_TIME = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)")
_LOG_DEVICES = re.compile(r"workdir .*; (\d+ \w+ devices? on \d+ hosts?)")
# A stage's row of the summary the run prints at its end: "  ct   ...   13m04s".
_SUMMARY_ROW = re.compile(r"^  (\w+)  .*\s(?:(\d+)h)?(?:(\d+)m)?(\d\d?)s$")


def _summary_row_seconds(row: re.Match) -> int:
    """A _SUMMARY_ROW match's stage time in seconds ("1h14m02s", "20m58s", "3s")."""
    hours, minutes, seconds = (int(row.group(k) or 0) for k in (2, 3, 4))
    return 3600 * hours + 60 * minutes + seconds


class RecordError(ValueError):
    """A record that cannot be written or read; the message names the fix."""


def utc_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def commit() -> str | None:
    """HEAD of the repository holding this package, "+dirty" when tracked files differ
    from it; None outside a git checkout (an installed wheel)."""
    def git(*args):
        # No optional locks: `git status` would otherwise take the index's lock to
        # refresh it, and a run killed meanwhile (kill -9, a timeout) would leave
        # .git/index.lock behind, failing the user's next git command.
        return subprocess.run(["git", "--no-optional-locks", "-C", str(REPO_ROOT), *args],
                              capture_output=True, text=True, timeout=30)
    try:
        head = git("rev-parse", "HEAD")
        if head.returncode != 0:
            return None
        dirty = git("status", "--porcelain", "--untracked-files=no").stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head.stdout.strip() + ("+dirty" if dirty else "")


def machine() -> dict:
    """The machine a figure was measured on: CPU model and usable cores, memory, and
    the JAX platform with its devices (e.g. "1 × NVIDIA H200")."""
    import jax  # here, not at import: summaries of old runs need no backend

    devices = jax.devices()
    kinds = {}
    for device in devices:
        kinds[device.device_kind] = kinds.get(device.device_kind, 0) + 1
    return {
        "cpu": cpu_model(),
        "cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
        else os.cpu_count(),
        "memory_gb": _memory_gb(),
        "platform": devices[0].platform,
        "devices": ", ".join(f"{count} × {kind}" for kind, count in kinds.items()),
        "processes": jax.process_count(),
    }


def cpu_model() -> str:
    """The CPU model's name (/proc/cpuinfo's "model name", else the platform's)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gb() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20, 1)
    except (OSError, ValueError, IndexError):
        pass
    return None


def command_line(entry: str | None = None) -> str:
    """This process's command as typed: `entry` is "-m causal_disent.main", or None for
    a script (its path as typed, e.g. benchmarks/ct_step_time.py); the interpreter is
    written relative to the working directory when it lies under it
    (".venv/bin/python"), as the README's commands are."""
    interpreter = Path(sys.executable)
    try:
        interpreter = interpreter.relative_to(Path.cwd())
    except ValueError:
        pass
    entry = entry if entry is not None else shlex.quote(sys.argv[0])
    return f"{shlex.quote(str(interpreter))} {entry} {shlex.join(sys.argv[1:])}".rstrip()


def provenance_line(command: str) -> dict:
    """What a workdir keeps of each command run on it (PROVENANCE_FILE)."""
    return {"date": utc_now(), "command": command, "commit": commit(), "machine": machine()}


def workdir_history(workdir: str | Path) -> dict:
    """What a finished workdir says of how it was made: its provenance lines (commands,
    dates, commit, machine; runs before they were kept have none), the commands of
    command.txt, and each command its log saw (log_sessions). A seed of a stacked run
    (W/seeds/seed_k) has none of its own: it gets the stacked run's, named in
    "stacked_run", since one command trained every seed at once."""
    workdir = Path(workdir)
    history: dict = {"workdir": workdir.name}
    stacked = seeds.stacked_run_of(workdir)
    if stacked is not None:
        history["stacked_run"] = stacked.name
        workdir = stacked
    provenance = workdir / PROVENANCE_FILE
    if provenance.is_file():
        history["commands"] = [json.loads(line) for line in provenance.read_text().splitlines()
                               if line.strip()]
    elif (workdir / "command.txt").is_file():
        history["commands"] = [{"date": line[:23], "command": line[25:]} for line in
                               (workdir / "command.txt").read_text().splitlines() if line]
    log = workdir / "log.txt"
    if log.is_file():
        history["log_sessions"] = log_sessions(log.read_text(errors="replace"))
    return history


def log_sessions(log_text: str) -> list[dict]:
    """The commands a workdir's log.txt saw, each from its "workdir ...; N devices"
    line: start and end time, seconds between, the devices, and the time of each stage
    from the summary it printed (a stage's own seconds, e.g. {"mcqvae": 1258})."""
    sessions = []
    for line in log_text.splitlines():
        stamp = _LOG_TIME.match(line)
        devices = _LOG_DEVICES.search(line)
        if stamp and devices:
            sessions.append({"started": stamp.group(1) + " UTC", "ended": None,
                             "devices": devices.group(1), "stage_seconds": {}})
        elif stamp and sessions:
            sessions[-1]["ended"] = stamp.group(1) + " UTC"
        elif sessions and (row := _SUMMARY_ROW.match(line)):
            sessions[-1]["stage_seconds"][row.group(1)] = _summary_row_seconds(row)
    for session in sessions:
        session["ended"] = session["ended"] or session["started"]
        session["seconds"] = _seconds_between(session["started"][:19], session["ended"][:19])
    return sessions


def _seconds_between(first: str, last: str) -> float:
    parse = lambda text: datetime.datetime.strptime(text, "%Y-%m-%d %H:%M:%S")  # noqa: E731
    return (parse(last) - parse(first)).total_seconds()


class Recorder:
    """Started when a command starts; `write` puts the record at the path given.

        recorder = records.Recorder("-m causal_disent.main", path)   # before the work
        ...
        recorder.write(figures, runs=[records.workdir_history(W)])
    """

    def __init__(self, entry: str | None, path: str | os.PathLike | None):
        self.path = None if path in (None, "") else check_path(path)
        self.command = command_line(entry)
        self.date = utc_now()
        # The code that runs is the code at the start; the machine is asked for at the
        # end, once the command has set up its devices (jax.distributed first).
        self.commit = commit() if self.path is not None else None
        self._started = time.perf_counter()

    def write(self, figures, runs: list[dict] | None = None) -> Path | None:
        if self.path is None:
            return None
        record = {"command": self.command, "commit": self.commit, "machine": machine(),
                  "date": self.date,
                  "wall_seconds": round(time.perf_counter() - self._started, 1),
                  "figures": figures}
        if runs:
            record["runs"] = runs
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text(json_values.dumps(record, indent=1, ensure_ascii=False) + "\n")
        except OSError as error:
            raise RecordError(f"cannot write the record {self.path}: {error.strerror}; "
                              f"give --record a writable path") from None
        print(f"record: {self.path}")
        return self.path


def add_record_flag(parser) -> None:
    """--record for a benchmark script's argparse parser."""
    parser.add_argument(
        "--record", default=None, metavar="results/NAME.json",
        help="also write this command's figures as a record (causal_disent/runs/records.py)")


def script_recorder(path: str | None) -> Recorder:
    """A benchmark script's Recorder (its path as the command), or exit with one
    `error:` line when --record cannot be a record file."""
    try:
        return Recorder(None, path)
    except RecordError as error:
        sys.exit(f"error: {error}")


def write_or_exit(recorder: Recorder, figures, runs: list[dict] | None = None) -> None:
    try:
        recorder.write(figures, runs=runs)
    except RecordError as error:
        sys.exit(f"error: {error}")


def check_path(path: str | os.PathLike) -> Path:
    """--record's value, refused before any work when it cannot be a record file."""
    path = Path(path).expanduser()
    if path.suffix != ".json":
        raise RecordError(f"--record={path}: a record is a .json file, e.g. "
                          f"--record=results/<name>.json")
    if path.is_dir():
        raise RecordError(f"--record={path} is a directory; name a .json file in it")
    path = path.absolute()
    folder = next(parent for parent in path.parents if parent.exists())
    if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
        # found now, not when the figures are in, minutes or hours later
        what = "is not a directory" if not folder.is_dir() else "is not writable"
        raise RecordError(f"--record={path}: {folder} {what}; give --record a writable "
                          f"path, e.g. --record=results/<name>.json")
    return path


def read_record(path: str | os.PathLike) -> dict:
    path = Path(path)
    try:
        record = json.loads(path.read_text())
    except OSError as error:
        raise RecordError(f"cannot read the record {path}: {error.strerror}") from None
    except json.JSONDecodeError as error:
        raise RecordError(f"{path} is not JSON ({error.msg}, line {error.lineno}); "
                          f"rewrite it with the command it names") from None
    missing = [key for key in ("command", "commit", "machine", "date", "figures")
               if key not in record]
    if missing:
        raise RecordError(f"{path} lacks {', '.join(missing)}: it was not written by "
                          f"--record; rewrite it with the command that made its figures")
    return record


def read_all(directory: str | os.PathLike) -> dict[str, dict]:
    """{name: record} of every results/<name>.json (sub-folders hold runs' files)."""
    return {path.stem: read_record(path) for path in sorted(Path(directory).glob("*.json"))}
