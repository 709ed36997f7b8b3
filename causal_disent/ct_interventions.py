"""Use a trained CT-VAE: apply an action to an image, or tell which action turned X
into Y.

    from causal_disent import ct_interventions
    model = ct_interventions.CTVAE.load("workdirs/ctvae_shapes3d_small")
    chain = ct_interventions.apply_action(model, image, action=3, times=4)  # [5, H, W, ch]
    probs = ct_interventions.infer_action(model, x, y)                       # [A]

Images are uint8 [H, W, ch] (or batches [B, H, W, ch]) as the dataset renders them.
Action f increases factor f by one step, F + f decreases it (`model.action_names`).
"""

from causal_disent.evaluation.ct_actions import CTVAE, apply_action, infer_action

__all__ = ["CTVAE", "apply_action", "infer_action"]
