"""BertEncoder and its layers: shapes, masking, dropout, XLA, mixed precision, saving."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf import BertConfig, BertEncoder

TINY = BertConfig.from_preset("L-2_H-64_A-4", vocab_size=200, max_position_embeddings=40)


def random_inputs(batch, seq, vocab=200, seed=0, pad_from=None):
    rng = np.random.default_rng(seed)
    mask = np.ones((batch, seq), np.int32)
    if pad_from is not None:
        mask[:, pad_from:] = 0
    segments = np.zeros((batch, seq), np.int32)
    segments[:, seq // 2:] = 1
    return {"input_ids": rng.integers(1, vocab, (batch, seq)).astype(np.int32) * mask,
            "input_mask": mask, "segment_ids": segments * mask}


def test_base_parameter_count():
    assert BertEncoder(BertConfig.from_preset("base")).count_params() == 109_482_240


@pytest.mark.parametrize("batch,seq", [(1, 1), (3, 17), (2, 40)])
def test_output_shapes_for_any_batch_and_length(batch, seq):
    out = BertEncoder(TINY)(random_inputs(batch, seq))
    assert out["sequence_output"].shape == (batch, seq, 64)
    assert out["pooled_output"].shape == (batch, 64)
    assert out["embedding_output"].shape == (batch, seq, 64)
    assert len(out["encoder_outputs"]) == 2
    np.testing.assert_array_equal(out["encoder_outputs"][-1], out["sequence_output"])


def test_longer_than_max_position_embeddings_is_an_error():
    with pytest.raises(ValueError, match="max_position_embeddings"):
        BertEncoder(TINY)(random_inputs(1, 41))


def test_padding_does_not_change_real_positions():
    encoder = BertEncoder(TINY)
    short = random_inputs(2, 10)
    padded = {k: np.pad(v, ((0, 0), (0, 6))) for k, v in short.items()}
    a = encoder(short)["sequence_output"].numpy()
    b = encoder(padded)["sequence_output"].numpy()[:, :10]
    np.testing.assert_allclose(a, b, atol=1e-5)


def test_mask_defaults_to_all_ones_and_segments_to_zeros():
    encoder = BertEncoder(TINY)
    ids = random_inputs(2, 8)["input_ids"]
    full = encoder({"input_ids": ids, "input_mask": np.ones_like(ids),
                    "segment_ids": np.zeros_like(ids)})["pooled_output"]
    np.testing.assert_allclose(encoder({"input_ids": ids})["pooled_output"], full, atol=1e-6)


def test_dropout_only_when_training():
    encoder = BertEncoder(TINY)
    x = random_inputs(2, 12)
    inference = [encoder(x, training=False)["sequence_output"].numpy() for _ in range(2)]
    training = [encoder(x, training=True)["sequence_output"].numpy() for _ in range(2)]
    np.testing.assert_array_equal(inference[0], inference[1])
    assert not np.allclose(training[0], training[1])
    assert not np.allclose(training[0], inference[0])


def test_xla_matches_graph_for_several_shapes():
    encoder = BertEncoder(TINY)
    graph = tf.function(lambda x: encoder(x)["sequence_output"])
    xla = tf.function(lambda x: encoder(x)["sequence_output"], jit_compile=True)
    for batch, seq in [(1, 5), (4, 33)]:
        x = {k: tf.constant(v) for k, v in random_inputs(batch, seq, pad_from=seq - 2).items()}
        # Same math, different fusion/summation order: float32 round-off only.
        np.testing.assert_allclose(xla(x), graph(x), atol=1e-5)


def test_encoder_round_trips_through_keras_file(tmp_path):
    encoder = BertEncoder(TINY)
    x = random_inputs(2, 9, pad_from=7)
    path = tmp_path / "encoder.keras"
    encoder.save(path)
    restored = keras.saving.load_model(path)
    assert restored.config == TINY
    np.testing.assert_array_equal(restored(x)["sequence_output"], encoder(x)["sequence_output"])


@pytest.mark.parametrize("act", ["gelu", "gelu_tanh", "relu", "tanh"])
def test_every_activation_builds_and_runs(act):
    out = BertEncoder(TINY.replace(hidden_act=act))(random_inputs(1, 4))
    assert np.isfinite(out["pooled_output"].numpy()).all()


def test_gelu_forms_differ_only_slightly():
    from bert_tf.model.activations import gelu, gelu_tanh
    x = np.linspace(-6, 6, 1001).astype(np.float32)
    diff = np.abs(gelu(x).numpy() - gelu_tanh(x).numpy())
    assert 1e-5 < diff.max() < 1e-3   # distinct functions, nearly equal (max ~2e-4 near |x|=2)


def test_a_fresh_encoders_weights_start_independent_of_each_other():
    """Each weight draws its own start (google-research's initializer per variable): an
    initializer shared by several weights would start query = key = value, and position
    embedding i = word embedding i."""
    encoder = BertEncoder(BertConfig(vocab_size=64, hidden_size=16, num_hidden_layers=1,
                                     num_attention_heads=2, intermediate_size=16,
                                     max_position_embeddings=32))
    block = encoder.layer_0
    starts = [w.numpy().ravel()[:256] for w in (
        block.attention.query.kernel, block.attention.key.kernel, block.attention.value.kernel,
        block.attention_output.kernel, block.intermediate.kernel, block.output_dense.kernel,
        encoder.pooler.dense.kernel, encoder.embeddings.word_embeddings,
        encoder.embeddings.position_embeddings)]
    for i, a in enumerate(starts):
        for b in starts[i + 1:]:
            assert abs(np.corrcoef(a, b)[0, 1]) < 0.3
