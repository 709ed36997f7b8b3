"""Helpers every layer may use (training, evaluation, data, models): device
sharding, image scaling, figures and JSON conversion. Nothing here imports from the
rest of the package."""
