"""No unsafe loading anywhere in the repository's code: a pickle runs arbitrary code
when loaded, so neither our files nor a downloaded dataset may be read with one."""

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCES = sorted(path for folder in ("causal_disent", "benchmarks", "tests", "launch", "configs")
                 for path in (REPO / folder).rglob("*.py"))
UNSAFE_MODULES = {"pickle", "cPickle", "cloudpickle", "dill", "shelve", "marshal"}


def unsafe_uses(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [f"import {a.name}" for a in node.names if a.name.split(".")[0] in UNSAFE_MODULES]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in UNSAFE_MODULES:
            found.append(f"from {node.module} import ...")
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "load" and isinstance(node.func.value, ast.Name)
              and node.func.value.id in {"np", "numpy", "joblib", "torch"}):
            safe = any(k.arg == "allow_pickle" and isinstance(k.value, ast.Constant)
                       and k.value.value is False for k in node.keywords)
            if node.func.value.id not in {"np", "numpy"} or not safe:
                found.append(f"line {node.lineno}: {node.func.value.id}.load without allow_pickle=False")
    return found


def test_the_scan_sees_the_sources():
    assert len(SOURCES) > 50 and REPO / "causal_disent" / "train" / "ct_codes.py" in SOURCES


# Files that may use pickle, and why it is safe there.
ALLOWED = {
    # Figures pickled over the pipes between a process and the worker processes it
    # started itself (what multiprocessing does), never read from a file.
    "causal_disent/utils/figure_workers.py": ["import pickle"],
}


def test_no_pickle_loading():
    offenders = {str(path.relative_to(REPO)): uses for path in SOURCES
                 if (uses := unsafe_uses(path))
                 and uses != ALLOWED.get(str(path.relative_to(REPO)))}
    assert offenders == {}


def test_the_scan_finds_an_unsafe_load(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import pickle\nimport numpy as np\nx = np.load('a.npy')\n"
                   "y = np.load('b.npy', allow_pickle=True)\nz = np.load('c.npy', allow_pickle=False)\n")
    assert unsafe_uses(bad) == ["import pickle", "line 3: np.load without allow_pickle=False",
                                "line 4: np.load without allow_pickle=False"]
