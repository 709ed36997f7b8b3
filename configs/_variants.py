"""Config variants as override tables: {section: {field: value}}, applied in order
over the base config (as big_vision's configs override a base by small tables). Not a
config itself (configs/ files whose names start with "_" are shared parts)."""

import ml_collections

Overrides = dict[str, dict[str, object]]


def apply_variant(config: ml_collections.ConfigDict, arg: str | None,
                  variants: dict[str, tuple[Overrides, ...]]) -> ml_collections.ConfigDict:
    """`config` with the tables of variant `arg` applied (none for "" or None)."""
    if arg in (None, ""):
        return config
    if arg not in variants:
        raise ValueError(f"unknown config variant {arg!r}; known: {', '.join(variants)} or none")
    for table in variants[arg]:
        for section, fields in table.items():
            unknown = sorted(set(fields) - set(_section(config, section)))
            if unknown:  # ml_collections would add them as new fields, unread
                raise ValueError(f"config variant {arg!r} sets {section}."
                                 f"{', '.join(unknown)}, not a field of the base config")
            config.update_from_flattened_dict(
                {f"{section}.{field}": value for field, value in fields.items()})
    return config


def _section(config: ml_collections.ConfigDict, dotted: str) -> ml_collections.ConfigDict:
    for name in dotted.split("."):
        config = config[name]
    return config
