"""do-interventions with a trained CausalVAE (Yang et al., CausalVAE, CVPR 2021, §3.2
and Fig. 6).

    from causal_disent import causalvae_interventions as cvi
    run = cvi.TrainedCausalVAE.load("workdirs/causalvae_pendulum_small")
    images = cvi.intervene(run.model, run.params, images, concept=0, value=1.5)  # uint8
    codes = cvi.intervened_codes(run.model, run.params, images, concept=2, value=-1.0,
                                 at_input=False, at_output=True)         # [B, n, k]
    value = run.codes_of_labels(40.0, concept=0)  # a label value in the codes' units

Images are uint8 [B, H, W, ch] (or one [H, W, ch]) as the datasets render them.
Values are in the latent codes' units, the label prior's λ₁(u) = (u − mean)/scale.
do(z_c = v) sets z_c at the mask layer's input (`at_input`: c's descendants follow,
through the mask layer in topological order) and at its output (`at_output`: the decoder reads v for c). The paper's do() is both;
for an effect concept `at_output` alone is the intervention that leaves its causes
untouched whatever the learned A.
"""

from causal_disent.evaluation.causalvae_do import (TrainedCausalVAE, intervene,
                                                   intervened_codes, reconstruct)

__all__ = ["TrainedCausalVAE", "intervene", "intervened_codes", "reconstruct"]
