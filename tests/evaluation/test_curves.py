"""The learning-curve figure."""

from PIL import Image

from causal_disent.evaluation.curves import save_learning_curve


def test_learning_curve_is_a_png(tmp_path):
    points = [
        {"step": 0, "action_accuracy": 0.08, "factor_accuracy": 0.17},
        {"step": 1000, "action_accuracy": 0.5},  # factor_accuracy missing: skipped
        {"step": 2000, "action_accuracy": 0.7, "factor_accuracy": 0.8},
    ]
    path = tmp_path / "figures" / "curve.png"
    save_learning_curve(points, ["action_accuracy", "factor_accuracy"], path,
                        chance={"action_accuracy": 1 / 12, "factor_accuracy": 1 / 6},
                        title="CT layer, test pairs")
    with Image.open(path) as image:
        assert image.format == "PNG" and image.width > 100 and image.height > 100
