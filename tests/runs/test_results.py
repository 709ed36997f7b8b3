"""A run's results.json: merged stage by stage, and refused in one line when damaged."""

import pytest

from causal_disent.runs import results


def test_stages_merge_into_one_file_and_a_fresh_workdir_has_none(tmp_path):
    assert results.read_results(tmp_path) == {}
    results.update_results(tmp_path, "mcqvae", {"psnr": 20.5})
    results.update_results(tmp_path, "ct", {"action_accuracy": 0.9})
    assert results.read_results(tmp_path) == {"mcqvae": {"psnr": 20.5},
                                              "ct": {"action_accuracy": 0.9}}


@pytest.mark.parametrize("data, problem", [
    (b'{"mcqvae": {"psnr"', "is not valid JSON"),  # cut short
    (b"\xff\xfe{}", "is not valid JSON"),  # not UTF-8
    (b"[1, 2]", "holds list, not the stages' results"),
])
def test_a_damaged_file_names_itself_and_the_fix_and_is_not_overwritten(tmp_path, data,
                                                                         problem):
    path = tmp_path / "results.json"
    path.write_bytes(data)
    before = path.read_bytes()
    for action in (lambda: results.read_results(tmp_path),
                   lambda: results.update_results(tmp_path, "ct", {"a": 1})):
        with pytest.raises(results.ResultsError,
                           match=rf"{path} {problem}.*move it aside and rerun the same command"):
            action()
    assert path.read_bytes() == before  # the scores it held stay for the user to read
