"""The README and docs/ say what the records in results/ say: every generated table
equals its rendering, an edited figure is caught, and the README stays a front page."""

import json
import shutil
from pathlib import Path

import pytest

from report import __main__ as report
from report import markdown, tables
from causal_disent.runs import records
from tests.helpers import REPO_ROOT


def test_every_generated_table_equals_its_rendering_from_the_records():
    assert report.differences(REPO_ROOT, REPO_ROOT / "results") == []


def test_every_table_has_a_place_and_every_place_a_table():
    """A table may stand on several pages (Table 1: the README and the CT-VAE page)."""
    placed = {name for path in markdown.markdown_files(REPO_ROOT)
              for name in markdown.blocks(path.read_text())}
    assert sorted(placed) == sorted(tables.TABLES)


@pytest.fixture
def copy_of_the_docs(tmp_path):
    shutil.copy(REPO_ROOT / "README.md", tmp_path / "README.md")
    shutil.copytree(REPO_ROOT / "docs", tmp_path / "docs")
    shutil.copytree(REPO_ROOT / "results", tmp_path / "results")
    return tmp_path


def test_one_edited_figure_in_the_readme_fails_the_check(copy_of_the_docs):
    readme = copy_of_the_docs / "README.md"
    text = readme.read_text()
    body = markdown.blocks(text)["headline"]
    first_row = body.splitlines()[2]
    edited_row = first_row.replace("0.8", "0.9", 1)
    assert edited_row != first_row
    readme.write_text(text.replace(first_row, edited_row))
    [difference] = report.differences(copy_of_the_docs, copy_of_the_docs / "results")
    assert difference.startswith("--- README.md (headline)")
    assert f"-{edited_row}" in difference and f"+{first_row}" in difference
    # --write puts the records' figure back.
    assert report.main(["--write", f"--root={copy_of_the_docs}"]) == 0
    assert readme.read_text() == text


def test_a_changed_record_or_a_missing_one_fails_the_check(copy_of_the_docs):
    results = copy_of_the_docs / "results"
    (results / "ct_step_time_cpu.json").unlink()
    found = report.differences(copy_of_the_docs, results)
    assert any("table headline" in entry and "ct_step_time_cpu.json is missing" in entry
               for entry in found)
    assert report.main([f"--root={copy_of_the_docs}"]) == 1


def test_the_zoo_table_adds_the_models_of_later_records_and_refuses_a_repeated_one(
        copy_of_the_docs):
    results = copy_of_the_docs / "results"
    first = json.loads((results / "zoo_dsprites_synth_small.json").read_text())
    [label, *_] = first["figures"]["groups"]
    later = dict(first, figures={"groups": {"Later VAE": first["figures"]["groups"][label]}})
    (results / "zoo_dsprites_synth_small_later.json").write_text(json.dumps(later))
    rendered = tables.render("zoo_dsprites_synth_small", tables.Results(results))
    assert rendered.splitlines()[-1].startswith("| Later VAE | 3 |")
    (results / "zoo_dsprites_synth_small_again.json").write_text(json.dumps(first))
    found = report.differences(copy_of_the_docs, results)
    assert any(entry.startswith("docs/baselines.md: table zoo_dsprites_synth_small: ")
               and "zoo_dsprites_synth_small_again.json summarises " in entry
               and label in entry.split(" again;")[0]
               for entry in found), found


def test_later_zoo_records_follow_the_studys_order_not_the_alphabet(copy_of_the_docs):
    results = copy_of_the_docs / "results"
    first = json.loads((results / "zoo_dsprites_synth_small.json").read_text())
    [label, *_] = first["figures"]["groups"]
    for suffix in ("annealedvae", "betatcvae"):
        group = first["figures"]["groups"][label]
        record = dict(first, figures={"groups": {f"{suffix} test": group}})
        (results / f"zoo_dsprites_synth_small_{suffix}.json").write_text(json.dumps(record))
    rendered = tables.render("zoo_dsprites_synth_small", tables.Results(results))
    models = [line.split(" | ")[0][2:] for line in rendered.splitlines()]
    assert models.index("betatcvae test") < models.index("annealedvae test")


def test_the_infomec_table_takes_later_records_in_the_zoos_order_and_refuses_a_stray_label(
        copy_of_the_docs):
    results = copy_of_the_docs / "results"
    for path in results.glob("infomec_zoo_dsprites_synth_small_*.json"):
        path.unlink()  # the later records this test writes stand in for them
    zoo = json.loads((results / "zoo_dsprites_synth_small.json").read_text())
    first_label, second_label, *_ = zoo["figures"]["groups"]
    infomec = json.loads((results / "infomec_zoo_dsprites_synth_small.json").read_text())
    [carded] = infomec["figures"]["groups"].values()
    # The zoo's second model, carded in a later record, and the first record re-labelled.
    later = dict(infomec, figures={"groups": {second_label: carded}})
    (results / "infomec_zoo_dsprites_synth_small_later.json").write_text(json.dumps(later))
    rendered = tables.render("zoo_infomec", tables.Results(results))
    models = [line.split(" | ")[0][2:] for line in rendered.splitlines()[2:]]
    assert models[:2] == [first_label, second_label]
    stray = dict(infomec, figures={"groups": {"Nameless VAE": carded}})
    (results / "infomec_zoo_dsprites_synth_small_stray.json").write_text(json.dumps(stray))
    found = report.differences(copy_of_the_docs, results)
    assert any("table zoo_infomec: " in entry and "Nameless VAE" in entry
               and "label each group as the zoo's record does" in entry
               for entry in found), found


def _as_seed(record: dict, seed: int, mic: float) -> dict:
    """`record` as if its command had trained `seed` and scored `mic`."""
    command = f"{record['runs'][0]['commands'][0]['command']} --config.seed={seed}"
    run = dict(record["runs"][0], commands=[{**record["runs"][0]["commands"][0],
                                             "command": command}])
    causal = dict(record["figures"]["causalvae"], mic=mic)
    return dict(record, runs=[run], figures={"causalvae": causal})


def test_the_seeds_table_takes_every_seed_record_and_refuses_a_misnamed_one(tmp_path):
    for name in ("causalvae_pendulum_small", "causalvae_flow_small"):
        shutil.copy(REPO_ROOT / "results" / f"{name}.json", tmp_path)
    seed_zero = json.loads((tmp_path / "causalvae_pendulum_small.json").read_text())
    seed_zero["figures"]["causalvae"]["mic"] = 99.0
    (tmp_path / "causalvae_pendulum_small.json").write_text(json.dumps(seed_zero))
    for seed, mic in ((1, 98.0), (2, 97.0)):
        (tmp_path / f"causalvae_pendulum_small_seed{seed}.json").write_text(
            json.dumps(_as_seed(seed_zero, seed, mic)))
    rows = tables.render("causalvae_seeds", tables.Results(tmp_path)).splitlines()
    assert rows[2].startswith("| Pendulum | 0, 1, 2 | 98.00 ± 1.00 | ")
    assert rows[3].startswith("| Flow | 0 | ")
    (tmp_path / "causalvae_pendulum_small_seed3.json").write_text(
        json.dumps(_as_seed(seed_zero, 4, 96.0)))
    with pytest.raises(records.RecordError, match="seed3.json trained seed 4"):
        tables.render("causalvae_seeds", tables.Results(tmp_path))


def test_table1_fills_a_column_once_its_seeds_record_exists_and_orders_the_datasets(tmp_path):
    shapes = "ctvae_small_seeds_authors_activations"
    shutil.copy(REPO_ROOT / "results" / f"{shapes}.json", tmp_path)
    rows = tables.render("ct_table1", tables.Results(tmp_path)).splitlines()
    assert rows[2].startswith("| Cars3D (ours: cars3d_synth) | 6 | 0.71 / 0.94 | not run yet |")
    assert rows[-1].endswith("| Shapes3D (1 of 4 run) |  |  |  |  |  |")
    # The same runs standing in for dSprites, their factor accuracy raised above Shapes3D's.
    record = json.loads((tmp_path / f"{shapes}.json").read_text())
    for run in record["figures"]["groups"]["authors activations"]["runs"]:
        run["results"]["ct"]["factor_accuracy"] = 0.99
    (tmp_path / "ctvae_table1_dsprites_synth.json").write_text(json.dumps(record))
    rows = tables.render("ct_table1", tables.Results(tmp_path)).splitlines()
    [dsprites] = [row for row in rows if row.startswith("| dSprites")]
    assert "| 0.44 / 0.58 | **0.909 ± 0.036 / 0.990 ± 0.000** |" in dsprites
    assert "| 3 |" in dsprites
    assert rows[-1].endswith(
        "| Cars3D > Shapes3D > Sprites > dSprites | dSprites > Shapes3D (2 of 4 run) "
        "|  |  |  |  |  |")


def test_the_fingerprint_comparison_names_a_config_whose_parameters_moved(tmp_path):
    for commit in ("7e9599a", "89efba4"):
        shutil.copy(REPO_ROOT / "results" / f"tiny_run_fingerprints_{commit}.json", tmp_path)
    after = tmp_path / "tiny_run_fingerprints_89efba4.json"
    record = json.loads(after.read_text())
    record["figures"]["configs"]["ivae_dsprites_synth"]["params"]["vae"] = "4:0000000000000000"
    after.write_text(json.dumps(record))
    row = tables.render("first_state_fingerprints", tables.Results(tmp_path)).splitlines()[2]
    assert row == "| 32 | 26 | 26 | 25 | ivae_dsprites_synth |"


def test_the_records_hold_command_commit_machine_date_and_figures():
    found = records.read_all(REPO_ROOT / "results")  # raises on a record lacking one
    assert len(found) >= 10
    for name, record in found.items():
        # The project's interpreter, or a GPU machine's own Python (its records are
        # written there and brought back).
        interpreter, arguments = record["command"].split(" ", 1)
        assert Path(interpreter).name in ("python", "python3"), name
        assert arguments.startswith(("-m causal_disent.", "benchmarks/")), name
        assert record["machine"]["cpu"] and record["date"].endswith("UTC"), name


def test_the_readme_is_a_front_page_with_its_results_first():
    lines = (REPO_ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 300
    first_table = next(number for number, line in enumerate(lines, 1) if line.startswith("|"))
    assert first_table <= 100
    assert lines[first_table - 2] == "<!-- report:headline -->"


def test_a_folder_that_is_no_checkout_and_an_unknown_table_are_one_line(tmp_path, capsys):
    assert report.main([f"--root={tmp_path}"]) == 1
    assert capsys.readouterr().err == (
        f"error: --root={tmp_path} is not a checkout of the repository (it needs README.md "
        f"and results/); give the repository's root folder\n")
    assert report.main(["--show=nope"]) == 1
    assert capsys.readouterr().err.startswith("error: no table named 'nope'; known: headline,")
