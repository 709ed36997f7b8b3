"""Learning-curve figures from the points of `runs.results.read_curve`."""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402


def save_learning_curve(
    points: list[dict],
    keys: list[str],
    path: str | Path,
    chance: dict | None = None,
    title: str = "",
) -> None:
    """Draws each metric of `keys` against the training step and saves a PNG.

    Args:
      points: curve points {"step": int, key: float, ...}, sorted by step (as
        `runs.results.read_curve` returns them); a point without a key is skipped for
        that key.
      keys: the metrics to draw, one line each (e.g. action_accuracy,
        factor_accuracy).
      path: the PNG to write; its folder is created.
      chance: {key: chance level}, drawn as a dashed line in that key's colour.
      title: the figure title.
    """
    figure, axes = plt.subplots(figsize=(6, 4))
    for key in keys:
        steps = [p["step"] for p in points if key in p]
        line, = axes.plot(steps, [p[key] for p in points if key in p], marker=".", label=key)
        if chance and key in chance:
            axes.axhline(chance[key], color=line.get_color(), linestyle="--",
                         linewidth=1, label=f"{key} chance")
    axes.set_xlabel("training step")
    axes.grid(alpha=0.3)
    if title:
        axes.set_title(title)
    axes.legend(fontsize="small")
    figure.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    plt.close(figure)
