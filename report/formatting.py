"""What every results table shares: the records of a results/ folder, read on
demand, and the formatting of their cells."""

from __future__ import annotations

import statistics
from pathlib import Path

from causal_disent.runs import records


class MissingRecord(records.RecordError):
    """A table needs a record that results/ does not hold."""


class Results:
    """The records of a results/ folder, read on demand."""

    def __init__(self, directory: Path):
        self.directory = Path(directory)

    def record(self, name: str) -> dict:
        path = self.directory / f"{name}.json"
        if not path.is_file():
            raise MissingRecord(f"{path} is missing: run the command that writes it "
                                f"(the page holding the table names it, with --record)")
        return records.read_record(path)

    def names(self, pattern: str) -> list[str]:
        """The names (without .json) of the records whose name matches the glob
        `pattern`, sorted."""
        return sorted(path.stem for path in self.directory.glob(f"{pattern}.json"))

    def run_folder(self, name: str) -> Path:
        path = self.directory / name
        if not (path / "results.json").is_file():
            raise MissingRecord(f"{path}/results.json is missing")
        return path


def fixed(value: float, digits: int = 3) -> str:
    return f"{value:.{digits}f}"


def mean_std(values, digits: int = 3) -> str:
    values = list(values)
    if len(values) == 1:
        return fixed(values[0], digits)
    return f"{fixed(statistics.mean(values), digits)} ± {fixed(statistics.stdev(values), digits)}"


def minutes(seconds: float, digits: int = 1) -> str:
    return f"{seconds / 60:.{digits}f}"


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def machine_name(machine: dict) -> str:
    """"2 AMD EPYC cores" on CPU, the accelerator otherwise."""
    if machine.get("platform") == "cpu":
        cores = machine["cores"]
        return f"{cores} {machine['cpu']} core{'s' * (cores != 1)}"
    return machine["devices"]


def runs_machine(record: dict) -> str:
    """Where a record's workdirs trained, as their provenance says; for runs from
    before workdirs kept it, the machine that wrote the record (the same kind of
    machine for every CPU record here; their logs name only the platform)."""
    machines = {machine_name(command["machine"]) for group in record["figures"]["groups"].values()
                for run in group["runs"]
                for command in run.get("history", {}).get("commands", []) if "machine" in command}
    return ", ".join(sorted(machines)) or machine_name(record["machine"])


def record_command(record: dict) -> str:
    return f"`{record['command']}`"


def stage_seconds(run: dict, stage: str) -> float | None:
    """A stage's training and evaluation time from the run's first logged command."""
    for session in run.get("history", {}).get("log_sessions", []):
        if stage in session["stage_seconds"]:
            return session["stage_seconds"][stage]
    return None


def whole_run_minutes(record: dict) -> float:
    """A `main --record`'s training time: every command that trained its workdir (a
    run resumed over slices has several), summed."""
    [run] = record["runs"]
    return history_minutes(run)


def history_minutes(history: dict) -> float:
    """The same for one workdir's history (records.workdir_history)."""
    return sum(session["seconds"] for session in history.get("log_sessions", [])) / 60


def group_runs(record: dict) -> dict[str, list[dict]]:
    return {label: group["runs"] for label, group in record["figures"]["groups"].items()}
