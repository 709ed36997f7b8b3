"""Converting arrays and numpy scalars into values `json` can write, strictly.

JSON has no NaN or infinity: Python writes them as bare `NaN` / `Infinity`, which
strict parsers (jq, JavaScript, most languages' libraries) reject. Every record the
library writes goes through `dumps`, which writes a non-finite number as `null` and
puts the reason beside it, under the key `<key>_not_finite`.
"""

import json
import math
import os
import re
from pathlib import Path

import numpy as np

from causal_disent.utils import file_errors

NOT_FINITE_SUFFIX = "_not_finite"


def to_python(value):
    """Arrays -> floats or lists, for JSON."""
    if type(value) in (float, int, bool, str):  # already plain (not numpy's subclasses)
        return value
    array = np.asarray(value)
    return array.item() if array.ndim == 0 else array.tolist()


def dumps(record, **kwargs) -> str:
    """`json.dumps` of `record` (dicts, lists, numbers, strings, arrays) with every
    non-finite number made `null` and explained beside it; never writes NaN.

    Indented (`indent=`), a list that holds no list or dict is written on one line:
    a matrix one row a line, not one number a line (a 12-action confusion matrix
    took 170 lines of results.json, two 1500 × 1500 consistency matrices 135 MB)."""
    try:  # plain finite values (training rows, mostly) are written as they are
        text = json.dumps(record, allow_nan=False, **kwargs)
    except (TypeError, ValueError):  # arrays, numpy numbers, or a non-finite number
        text = json.dumps(strict(record), allow_nan=False, **kwargs)
    if kwargs.get("indent") is None:
        return text
    return _FLAT_LIST.sub(_one_line, text)


# An indented list holding no bracket or brace: its items are numbers, strings without
# brackets, booleans or nulls. Only json's own layout puts a newline after "[" (a
# string holds none), so this never starts inside a string.
_FLAT_LIST = re.compile(r"\[\n([^\[\]{}]*)\n[ \t]*\]")


def _one_line(match: re.Match) -> str:
    return "[" + " ".join(line.strip() for line in match.group(1).split("\n")) + "]"


def strict(value):
    """`value` with arrays as lists and non-finite numbers as None; in a dict, a key
    whose value held any gets a sibling `<key>_not_finite` saying what they were."""
    if isinstance(value, dict):
        result = {}
        for key, item in value.items():
            result[key] = strict(item)
            reason = _not_finite_reason(item)
            if reason is not None:
                result[f"{key}{NOT_FINITE_SUFFIX}"] = reason
        return result
    if isinstance(value, (list, tuple)):
        return [strict(item) for item in value]
    if isinstance(value, (np.ndarray, np.generic)) or hasattr(value, "__array__"):
        return strict(to_python(value))
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _not_finite_reason(value) -> str | None:
    """"nan", "inf" or "-inf" for a non-finite number; "k of n values were not finite"
    for an array or list of numbers holding some; else None. A None in a list is a
    value left out on purpose (e.g. the accuracy of an action with no test pair),
    not a failure."""
    if isinstance(value, (dict, str)) or value is None:
        return None
    if isinstance(value, (list, tuple)):
        value = [item for item in value if item is not None]
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError):  # nested dicts, strings, ragged lists
        return None
    bad = ~np.isfinite(array)
    if not bad.any():
        return None
    if array.ndim == 0:
        return str(array.item())
    return f"{int(bad.sum())} of {array.size} values were not finite"


def append_lines(path: Path, records: list) -> None:
    """Appends each record as one strict JSON line to `path`. A process killed
    mid-write leaves a partial last line: the first record then starts a new line,
    and readers skip the partial one."""
    if not records:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    prefix = "\n" if _ends_mid_line(path) else ""
    with file_errors.naming(path), path.open("a") as f:
        f.write(prefix + "".join(dumps(record) + "\n" for record in records))


def _ends_mid_line(path: Path) -> bool:
    if not path.exists() or path.stat().st_size == 0:
        return False
    with path.open("rb") as f:
        f.seek(-1, os.SEEK_END)
        return f.read(1) != b"\n"


def read_json(path: Path):
    """The JSON value in the file at `path`; ValueError naming the file when it is not
    JSON (cut short, not UTF-8), so that a damaged file is one readable line."""
    try:
        return json.loads(Path(path).read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        reason = error.msg if isinstance(error, json.JSONDecodeError) else error.reason
        raise ValueError(f"{path} is not valid JSON ({reason})") from error


def differences(saved, current, path: str = ""):
    """(dotted path, saved value, current value) of every leaf that differs between
    two nested dicts of JSON values, so that an error names the fields, not two
    whole configs."""
    if isinstance(saved, dict) and isinstance(current, dict):
        for key in sorted(set(saved) | set(current)):
            yield from differences(saved.get(key), current.get(key),
                                   f"{path}.{key}" if path else str(key))
    elif saved != current:
        yield path, saved, current
