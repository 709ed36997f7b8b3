"""A config file's fields held against the library's own configs (configs/*.py).

The stages read their fields by name, and ml_collections lets a config file hold any
field it likes: a researcher's own config with `optim.learnin_rate` trained at the
default rate without a word, and one without `vae.optim` ended in a traceback from
inside the stage's checks. The library's configs name every field their stages read
(each of its configs has the same fields in every variant), so a config file is
checked against them before anything runs: a field none of them has is refused with
the nearest name, and so is a field that the library config nearest to it has and it
lacks, with that config's value. Only config files are checked: a run's own
config.json may come from before a field existed (the stages read such fields with a
default)."""

import difflib

import ml_collections

_SHOWN = 4  # fields a line names before it counts the rest


def field_problem(config: ml_collections.ConfigDict,
                  library: dict[str, ml_collections.ConfigDict]) -> str | None:
    """None when `config` has exactly the fields of the library config nearest to it
    (`library`: file name -> its default config), a field of another library config
    apart (unused, harmless); else one line naming the fields and the fix."""
    if not library:
        return None  # an installation without configs/: nothing to hold it against
    own = node_paths(config)
    library_paths = {name: node_paths(reference) for name, reference in library.items()}
    known = set().union(*library_paths.values())
    name = _nearest(own, library_paths)
    unknown = _topmost(path for path in own if path not in known)
    if unknown:
        return _unknown_line(unknown, known, name)
    missing = _missing(own, library_paths[name])
    if missing:
        return _missing_line(missing, library_paths[name], name)
    return None


def node_paths(config) -> dict[str, object]:
    """Dotted path -> value of every section and field of `config`, in order."""
    paths = {}
    for key, value in config.items():
        paths[key] = value
        if isinstance(value, (ml_collections.ConfigDict, dict)):
            paths.update({f"{key}.{path}": inner
                          for path, inner in node_paths(value).items()})
    return paths


def _nearest(own: dict, library_paths: dict) -> str:
    """The name of the library config of the same stages and (the VAE family) the same
    loss whose fields differ least from `own`'s, then of the same dataset; failing
    that, the one of the most stages in common. Configs as their `node_paths`."""
    def distance(name):
        theirs = library_paths[name]
        return (_stages(theirs) != _stages(own),
                theirs.get("vae.objective.name") != own.get("vae.objective.name"),
                -len(set(_stages(theirs)) & set(_stages(own))),
                len(set(own) ^ set(theirs)),
                theirs.get("data.name") != own.get("data.name"),
                name)

    return min(library_paths, key=distance)


def _stages(paths: dict) -> tuple:
    stages = paths.get("stages", ())
    return tuple(stages) if isinstance(stages, (tuple, list)) else ()


def _topmost(paths) -> list:
    """`paths` without those inside another of them (a whole unknown section once)."""
    found = []
    for path in paths:
        if not any(path.startswith(f"{other}.") for other in found):
            found.append(path)
    return found


def _missing(own: dict, nearest: dict) -> list:
    """The paths `nearest` has and `own` lacks, topmost first (both as `node_paths`).
    The section of a stage that comes after every stage `own` trains is not needed
    (stage 1 alone needs no `ct`); an earlier stage's is (stage 2 builds stage 1's
    encoder from `mcqvae`)."""
    order = _stages(nearest)
    trained = [order.index(stage) for stage in _stages(own) if stage in order]
    unneeded = set(order[max(trained) + 1:]) if trained else set()
    return _topmost(path for path in nearest
                    if path not in own and path.split(".", 1)[0] not in unneeded)


def _unknown_line(unknown: list, known: set, name: str) -> str:
    named = "; ".join(f"{path}{_guess(path, known)}" for path in unknown[:_SHOWN])
    more = f" (and {len(unknown) - _SHOWN} more)" if len(unknown) > _SHOWN else ""
    return (f"the config sets fields that no stage reads (none of the library's configs "
            f"has them): {named}{more}; rename or remove them ({name}, the library's "
            f"config nearest to it, has every field its stages read)")


def _guess(path: str, known: set) -> str:
    """" (did you mean P?)" for the known field nearest to `path`: a sibling of a
    similar name, else a field of the same name elsewhere."""
    parent, _, field = path.rpartition(".")
    siblings = {other.rpartition(".")[2]: other for other in known
                if other.rpartition(".")[0] == parent}
    close = difflib.get_close_matches(field, list(siblings), n=1)
    if close:
        return f" (did you mean {siblings[close[0]]}?)"
    elsewhere = sorted(other for other in known if other.rpartition(".")[2] == field)
    return f" (did you mean {' or '.join(elsewhere[:2])}?)" if elsewhere else ""


def _missing_line(missing: list, nearest: dict, name: str) -> str:
    named = "; ".join(_as_set(path, nearest[path]) for path in missing[:_SHOWN])
    more = f" (and {len(missing) - _SHOWN} more)" if len(missing) > _SHOWN else ""
    module = name.rsplit("/", 1)[-1].removesuffix(".py")
    return (f"the config lacks fields its stages read: {named}{more}, as {name} (the "
            f"library's config nearest to it) sets them; add them, or build the config "
            f"from that file: from configs import {module}; config = "
            f"{module}.get_config()")


def _as_set(path: str, value) -> str:
    if isinstance(value, (ml_collections.ConfigDict, dict)):
        return f"{path} (a section: {', '.join(value.keys())})"
    return f"{path} = {value!r}"
