"""evaluation/model_calls.py: a model's methods compiled once per model, whatever its
parameters (a stacked run evaluates and draws every seed's)."""

import jax
import numpy as np

from causal_disent.evaluation import consistency_scores, model_calls
from causal_disent.models.vae import VAE

FIELDS = dict(num_latents=3, encoder_widths=(4,), encoder_hidden=4, decoder_widths=(4,),
              decoder_hidden=4, image_shape=(8, 8, 1))


def test_two_seeds_parameters_share_one_compiled_call_and_get_their_own_values():
    images = jax.random.uniform(jax.random.key(9), (7, 8, 8, 1))
    latents = jax.random.normal(jax.random.key(8), (7, 3))
    calls = {  # a compiled call: the same model method called directly
        model_calls.encoded_means: (images, lambda m, p: m.apply(
            {"params": p}, images, method=m.encode)[0]),
        model_calls.decoded_pixels: (latents, lambda m, p: jax.nn.sigmoid(m.apply(
            {"params": p}, latents, method=m.decode))),
        model_calls.outputs: (images, lambda m, p: m.apply({"params": p}, images)["logits"]),
    }
    compiled_before = {call: call._cache_size() for call in calls}
    values = {call: [] for call in calls}
    for seed in range(2):
        model = VAE(**FIELDS)  # each seed's own module, equal to the others
        params = model.init(jax.random.key(seed), images[:1])["params"]
        for call, (inputs, direct) in calls.items():
            got = call(model, params, inputs)
            got = got["logits"] if call is model_calls.outputs else got
            np.testing.assert_allclose(got, direct(model, params), rtol=1e-5, atol=1e-6)
            values[call].append(np.asarray(got))
    for call in calls:
        assert call._cache_size() == compiled_before[call] + 1, call.__name__
        assert not np.allclose(*values[call])  # the parameters are not baked in


def test_consistency_scores_of_two_seeds_compile_their_responses_once():
    images = np.asarray(jax.random.uniform(jax.random.key(3), (6, 8, 8, 1)))
    before = consistency_scores._responses._cache_size()
    scores = []
    for seed in range(2):
        model = VAE(**FIELDS)
        params = model.init(jax.random.key(seed), images[:1])["params"]
        scores.append(consistency_scores.consistency_scores(model, params, images,
                                                            batch_size=6))
    assert consistency_scores._responses._cache_size() == before + 1
    assert scores[0]["inv"] != scores[1]["inv"]
