"""The files that make the repository usable by others: its licence, how to cite it,
and the versions the test suite last passed with."""

import re

import yaml

from tests.helpers import REPO_ROOT


def test_the_licence_is_apache_2():
    text = (REPO_ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text


def test_the_citation_file_cites_the_software_and_the_papers_it_reimplements():
    citation = yaml.safe_load((REPO_ROOT / "CITATION.cff").read_text())
    assert citation["cff-version"] == "1.2.0" and citation["license"] == "Apache-2.0"
    version = re.search(r'__version__ = "([^"]+)"',
                        (REPO_ROOT / "causal_disent" / "__init__.py").read_text()).group(1)
    assert citation["version"] == version
    titles = {reference["title"] for reference in citation["references"]}
    for paper in ("Disentanglement of Latent Representations via Causal Interventions",
                  "CausalVAE: Disentangled Representation Learning via Neural Structural "
                  "Causal Models", "On the interventional consistency of autoencoders"):
        assert paper in titles
    assert all(reference["authors"] and reference["year"]
               for reference in citation["references"])


def test_the_constraints_pin_every_dependency():
    """constraints.txt: `pip install -e .[test] -c constraints.txt` reproduces the
    environment the suite last passed in; every requirement of setup.py is pinned."""
    pinned = {}
    for line in (REPO_ROOT / "constraints.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, version = line.split("==")
            pinned[_normal(name)] = version
    # install_requires and the test extra (the optional extras below them are not
    # installed by the suite).
    setup = (REPO_ROOT / "setup.py").read_text().split('"sprites"')[0]
    required = re.findall(r'"([A-Za-z][\w.-]*)(?:\[[^\]]*\])?\s*[<>=!~]', setup)
    assert required and all(_normal(name) in pinned for name in required), (
        sorted(_normal(name) for name in required if _normal(name) not in pinned))


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_the_docs_commands_use_the_environment_interpreter_of_the_first_command():
    """A plain `python` without an activated venv ends in ModuleNotFoundError."""
    plain = re.compile(r"(?<![\w./-])python (?=-m |-c |benchmarks/|tests/)|`python -m\n")
    for path in [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]:
        for number, line in enumerate(path.read_text().splitlines(keepends=True), 1):
            assert not plain.search(line), f"{path.name}:{number}: {line.strip()}"
