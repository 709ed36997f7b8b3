"""OSErrors without a file name get the path being written."""

import pytest

from causal_disent.utils import file_errors


def test_an_unnamed_error_is_named_and_a_named_one_left_as_it_is(tmp_path):
    with pytest.raises(OSError) as raised:
        with file_errors.naming(tmp_path / "a.png"):
            raise OSError(28, "No space left on device")
    assert (raised.value.errno, raised.value.strerror, raised.value.filename) == (
        28, "No space left on device", str(tmp_path / "a.png"))
    original = FileNotFoundError(2, "No such file or directory", "elsewhere")
    with pytest.raises(OSError) as raised:
        with file_errors.naming(tmp_path / "a.png"):
            raise original
    assert raised.value is original
    with file_errors.naming(tmp_path / "a.png"):
        pass  # nothing raised, nothing changed
