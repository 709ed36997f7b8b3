"""Learning-curve figures from the points of `runs.results.read_curve`."""

from pathlib import Path

from matplotlib.figure import Figure

from causal_disent.utils import figures


def save_learning_curve(
    points: list[dict],
    keys: list[str],
    path: str | Path,
    chance: dict | None = None,
    title: str = "",
    ylabel: str | None = None,
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
      title: the figure title (default: "learning curve").
      ylabel: the y axis label (default: `curve_ylabel(keys)`).
    """
    figure = draw_learning_curve(points, keys, chance, title, ylabel)
    figures.save_figure(figure, path)


def draw_learning_curve(points: list[dict], keys: list[str], chance: dict | None = None,
                        title: str = "", ylabel: str | None = None) -> Figure:
    """The figure of `save_learning_curve` (same arguments)."""
    figure = Figure(figsize=(6, 4), dpi=figures.DPI, layout="constrained")
    axes = figure.subplots()
    for key in keys:
        steps = [p["step"] for p in points if key in p]
        line, = axes.plot(steps, [p[key] for p in points if key in p], marker=".", label=key)
        if chance and key in chance:
            axes.axhline(chance[key], color=line.get_color(), linestyle="--",
                         linewidth=1, label=f"{key} chance")
    axes.set_xlabel("training step")
    axes.set_ylabel(curve_ylabel(keys) if ylabel is None else ylabel)
    axes.grid(alpha=0.3)
    axes.set_title(title or "learning curve")
    axes.legend(fontsize="small")
    return figure


def curve_ylabel(keys: list[str]) -> str:
    """What the y axis shows: the last word the keys share (action_accuracy and
    factor_accuracy -> "accuracy"), else the keys themselves."""
    last_words = {key.rsplit("_", 1)[-1] for key in keys}
    if len(keys) > 1 and len(last_words) == 1:
        return last_words.pop()
    return ", ".join(keys)
