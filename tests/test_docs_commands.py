"""Every fenced shell command of the README and docs/ that runs a `:tiny` config runs
as written (the README's first command in test_main.py, which checks its output line
by line; the others here). Setting up the environment (`python3 -m venv`, `pip
install`) is the one part not run: the suite runs inside that environment."""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO_ROOT

MARKDOWN = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
FENCED = re.compile(r"```(?:bash|sh|shell)\n(.*?)```", re.S)
SETUP = re.compile(r"^(python3 -m venv |\.venv/bin/pip )")
INTERPRETER = ".venv/bin/python"


def fenced_commands(path: Path) -> list[str]:
    """The shell commands of `path`'s fenced shell blocks, continuation lines joined
    and comments dropped."""
    commands = []
    for block in FENCED.findall(path.read_text()):
        for command in block.replace("\\\n", " ").splitlines():
            command = re.sub(r"\s+#.*$", "", command).strip()
            if command and not command.startswith("#"):
                commands.append(command)
    return commands


def tiny_commands() -> list[tuple[str, str]]:
    """(file, command) for every documented command with a `:tiny` config."""
    return [(str(path.relative_to(REPO_ROOT)), command) for path in MARKDOWN
            for command in fenced_commands(path) if ":tiny" in command]


def readme_first_command() -> str:
    return fenced_commands(REPO_ROOT / "README.md")[0]


def runnable_parts(command: str) -> list[list[str]]:
    """The `&&`-joined parts of `command` that the suite runs, as argument lists with
    the environment's interpreter; the setup parts are left out."""
    parts = [part.strip() for part in command.split("&&")]
    return [[sys.executable, *shlex.split(part)[1:]] for part in parts
            if not SETUP.match(part) and part.startswith(INTERPRETER + " ")]


def run_documented(command: str, cwd: Path) -> list[subprocess.CompletedProcess]:
    """Runs the command's runnable parts in `cwd`, where `configs/` is the library's
    (as in a clone), stopping at the first that fails."""
    if not (cwd / "configs").exists():
        (cwd / "configs").symlink_to(REPO_ROOT / "configs")
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), JAX_PLATFORMS="cpu")
    done = []
    for argv in runnable_parts(command):
        done.append(subprocess.run(argv, env=env, capture_output=True, text=True,
                                   timeout=600, cwd=cwd))
        if done[-1].returncode:
            break
    return done


def test_the_readmes_first_command_sets_up_and_runs_tiny():
    command = readme_first_command()
    assert command.startswith('python3 -m venv .venv && .venv/bin/pip install -e ".[test]" && ')
    assert [part[1:] for part in runnable_parts(command)] == [
        ["-m", "causal_disent.main", "--config=configs/ctvae_shapes3d.py:tiny"]]


OTHER_TINY_COMMANDS = [entry for entry in tiny_commands() if entry[1] != readme_first_command()]


@pytest.mark.parametrize("where, command", OTHER_TINY_COMMANDS,
                         ids=[f"{where}:{command[:60]}" for where, command in OTHER_TINY_COMMANDS])
def test_a_documented_tiny_command_runs_as_written(where, command, tmp_path):
    done = run_documented(command, tmp_path)
    assert done, f"{where}: nothing to run in {command!r}"
    assert done[-1].returncode == 0, f"{where}: {command}\n{done[-1].stderr[-3000:]}"


def test_the_command_reader_joins_lines_and_leaves_the_setup_out(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("```bash\n# a comment\npython3 -m venv .venv && .venv/bin/python -m a \\\n"
                    "    --x=1   # why\n```\n```python\nnot_shell()\n```\n")
    [command] = fenced_commands(page)
    assert command == "python3 -m venv .venv && .venv/bin/python -m a      --x=1"
    assert runnable_parts(command) == [[sys.executable, "-m", "a", "--x=1"]]
