"""Mixed precision and XLA agree with float32 on real weights (all-MiniLM-L6-v2).

Tolerances: bfloat16 keeps 8 significant bits (relative step 2**-8 = 0.4%), float16 11 bits
(0.05%). Errors grow through 6 layers of LayerNorm-ed activations of order 1, so we bound the
relative error of the final layer by a small multiple of the unit round-off: 4% for bf16, 0.5%
for fp16 (norm of the difference over norm of the float32 output, at non-padded positions), and
require the pooled sentence vectors to keep cosine similarity > 0.99.
"""

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import BertEncoder
from bert_tf.checkpoints import assign, extract


def _inputs(ref):
    return {"input_ids": ref["input_ids"], "input_mask": ref["attention_mask"],
            "segment_ids": ref["token_type_ids"]}


def _masked(x, mask):
    return np.asarray(x, np.float32)[mask.astype(bool)]


@pytest.mark.parametrize("policy,rel_tol", [("mixed_bfloat16", 0.04), ("mixed_float16", 0.005)])
def test_mixed_precision_matches_float32(minilm_encoder, minilm_reference, policy, rel_tol):
    half = BertEncoder(minilm_encoder.config, dtype=policy)
    assign(half, extract(minilm_encoder), "minilm")
    x = _inputs(minilm_reference)
    mask = minilm_reference["attention_mask"]
    full_out = minilm_encoder(x)
    half_out = half(x)
    assert half.embeddings.word_embeddings.dtype == "float32"  # variables stay float32
    ref = _masked(full_out["sequence_output"], mask)
    got = _masked(half_out["sequence_output"], mask)
    assert np.linalg.norm(got - ref) / np.linalg.norm(ref) < rel_tol
    a = np.asarray(full_out["pooled_output"], np.float32)
    b = np.asarray(half_out["pooled_output"], np.float32)
    cos = (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)
    assert cos.min() > 0.99


def test_xla_matches_float32_reference(minilm_encoder, minilm_reference):
    xla = tf.function(lambda x: minilm_encoder(x)["sequence_output"], jit_compile=True)
    out = xla({k: tf.constant(v) for k, v in _inputs(minilm_reference).items()}).numpy()
    mask = minilm_reference["attention_mask"]
    # Same float32 math as the stored HF activations, fused differently: round-off only.
    diff = np.abs(_masked(out, mask) - _masked(minilm_reference["last_hidden_state"], mask))
    assert diff.max() < 1e-4
