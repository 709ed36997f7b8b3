"""Builds an MPI3D variant as TFDS ArrayRecord from its release file, without
TensorFlow (the files: mpi3d_release.py; the builders: mpi3d.py):

  python -m causal_disent.data.tfds_builders.build_mpi3d mpi3d_real --data_dir=DATA_DIR

The file is looked for in <data_dir>/downloads/manual/ (or --manual_dir) and its
header checked before TFDS starts, so a missing or wrong file is one `error:` line.
"""

from __future__ import annotations

import os

from causal_disent.data.tfds_builders import mpi3d_release


def prepare(name: str, data_dir: str, manual_dir: str | None = None) -> None:
    """Builds `name` (one of mpi3d_release.NAMES) as ArrayRecord."""
    import tensorflow_datasets as tfds

    from causal_disent.data.tfds_builders import mpi3d  # deferred: imports TFDS

    builder = mpi3d.BUILDERS[name](data_dir=data_dir, file_format="array_record")
    config = tfds.download.DownloadConfig(manual_dir=manual_dir) if manual_dir else None
    builder.download_and_prepare(download_config=config)


def main() -> None:
    """The command: its file missing, or not the release's, or a package missing: one
    line."""
    from causal_disent.data.tfds_reading import default_data_dir
    from causal_disent.utils import arguments

    parser = arguments.OneLineArgumentParser(
        description="Build an MPI3D variant (ArrayRecord) from its release file.")
    parser.add_argument("name", choices=mpi3d_release.NAMES)
    parser.add_argument("--data_dir", default=default_data_dir())
    parser.add_argument("--manual_dir", default=None, help="folder holding the variant's "
                        ".npz (default <data_dir>/downloads/manual)")
    args = parser.parse_args()
    manual_dir = args.manual_dir or os.path.join(args.data_dir, "downloads", "manual")
    file_name = mpi3d_release.file_name(args.name)
    path = os.path.join(manual_dir, file_name)
    if not os.path.isfile(path):
        raise SystemExit(f"error: {path} does not exist: download {file_name} from "
                         f"{mpi3d_release.RELEASE_URL} and put it there, or pass "
                         f"--manual_dir=<the folder holding it>")
    try:
        mpi3d_release.check_file(path, args.name)  # a wrong file fails before TFDS starts
        prepare(args.name, args.data_dir, manual_dir)
    except (mpi3d_release.ReleaseFileError, ImportError) as error:
        raise SystemExit(f"error: {error}") from None


if __name__ == "__main__":
    main()
