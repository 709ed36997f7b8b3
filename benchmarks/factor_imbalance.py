r"""How each factor of the named datasets shares the transition pairs (the CT-VAE
paper's Figure 4; causal_disent/data/imbalance.py says what each share means): prints
them as JSON, and optionally records them and draws the bars.

  .venv/bin/python benchmarks/factor_imbalance.py cars3d_synth shapes3d_synth \
      sprites_synth dsprites_synth --record=results/factor_imbalance.json \
      --figure=docs/factor_imbalance.png
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

# Runs from a checkout without installing the package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from causal_disent.data import imbalance, registry, transitions  # noqa: E402
from causal_disent.runs import records  # noqa: E402
from causal_disent.utils import arguments, figures  # noqa: E402


def main(argv: Sequence[str] | None = None) -> None:
    parser = arguments.OneLineArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", nargs="+",
                        help=f"factor datasets, of: {', '.join(sorted(registry.DATASETS))}")
    parser.add_argument("--data_dir", default=None, help="TFDS data dir (real datasets)")
    parser.add_argument("--figure", default=None, metavar="PNG", help="also draw the bars")
    records.add_record_flag(parser)
    args = parser.parse_args(argv)
    recorder = records.script_recorder(args.record)
    per_dataset = []
    for name in args.datasets:
        try:
            dataset = registry.get_dataset(name, data_dir=args.data_dir)
            if transitions.is_attribute_dataset(dataset):
                raise ValueError(f"{name} has binary attributes, not a factor grid; "
                                 "name factor datasets only")
            per_dataset.append(imbalance.factor_pair_shares(dataset))
        except (ValueError, FileNotFoundError) as error:
            sys.exit(f"error: {error}")
    print(json.dumps(per_dataset, indent=1))
    if args.figure:
        drawn = figures.save_figure(imbalance.draw_factor_shares(per_dataset), Path(args.figure))
        print(f"figure: {drawn}")
    records.write_or_exit(recorder, {"datasets": per_dataset})


if __name__ == "__main__":
    main()
