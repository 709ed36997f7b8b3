"""The package's layers, checked on its source: no import circles, and no layer
reaches up into one above it (docs/design.md has the picture). The top of the
package (its modules outside any subpackage: the entry points, the public API and
cli.py, which loads configs and turns flags into one-line errors) sits above every
layer.

Every import counts, including those inside functions (a circle hidden in a function
is still a circle).
"""

import ast
from pathlib import Path

import pytest

PACKAGE = "causal_disent"
ROOT = Path(__file__).resolve().parents[1] / PACKAGE

TOP = "the top level"

# layer -> the layers it must never import (the ones above it).
FORBIDDEN = {
    "utils": {"data", "models", "objectives", "discovery", "runs", "evaluation", "train", TOP},
    "data": {"models", "objectives", "runs", "evaluation", "train", TOP},
    "models": {"data", "runs", "evaluation", "train", TOP},
    "objectives": {"data", "runs", "evaluation", "train", TOP},
    "discovery": {"data", "models", "objectives", "runs", "evaluation", "train", TOP},
    "runs": {"evaluation", "train", TOP},
    "evaluation": {"train", TOP},
    "train": {TOP},
}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def all_modules() -> dict[str, Path]:
    return {module_name(path): path for path in ROOT.rglob("*.py")}


def imported_modules(path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that `path` imports anywhere in its body."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # `from a.b import c` imports module a.b.c when there is one, else a.b.
            names = [f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in modules
                     else node.module for alias in node.names]
        else:
            continue
        found.update(name for name in names if name in modules)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = all_modules()
    return {name: imported_modules(path, modules) - {name} for name, path in modules.items()}


def layer(module: str) -> str | None:
    """A subpackage's name (its __init__ included), TOP for the package's own modules,
    None for the package itself."""
    parts = module.split(".")
    if len(parts) == 1:
        return None
    return parts[1] if (ROOT / parts[1]).is_dir() else TOP


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, on_stack, stack, circles = {}, {}, set(), [], []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return circles


def test_the_package_has_no_import_circles():
    assert import_circles(import_graph()) == []


def test_the_circle_finder_finds_a_circle_hidden_behind_others():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"a"}}
    assert import_circles(graph) == [["a", "b", "c"]]


@pytest.mark.parametrize("lower", sorted(FORBIDDEN))
def test_no_layer_imports_a_layer_above_it(lower):
    reaching_up = sorted(
        f"{module} imports {target}"
        for module, targets in import_graph().items() if layer(module) == lower
        for target in targets if layer(target) in FORBIDDEN[lower]
    )
    assert reaching_up == []


def test_a_function_level_import_counts(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from causal_disent.train import stages\n")
    modules = all_modules()
    assert imported_modules(source, modules) == {"causal_disent.train.stages"}


def test_the_top_level_is_cli_and_the_entry_points_and_a_subpackage_is_its_layer():
    assert layer("causal_disent.cli") == TOP
    assert layer("causal_disent.ct_interventions") == TOP
    assert layer("causal_disent.models") == "models"
    assert layer("causal_disent.data.own_files") == "data"
    assert layer("causal_disent") is None


def test_every_layer_below_the_top_is_held(tmp_path):
    layers = {path.name for path in ROOT.iterdir()
              if path.is_dir() and (path / "__init__.py").is_file()}
    assert layers - {"report"} == set(FORBIDDEN)
