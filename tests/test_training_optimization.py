"""Optimisers and schedule with google-research/bert's semantics."""

import keras
import numpy as np
import pytest

from bert_tf.training.optimization import (AdamWeightDecay, Lamb, WarmupLinearDecay,
                                           create_optimizer)


def test_schedule_warms_up_linearly_then_decays_to_zero():
    schedule = WarmupLinearDecay(peak=1e-4, total_steps=100, warmup_steps=10)
    values = [float(schedule(s)) for s in (0, 5, 10, 55, 100, 150)]
    np.testing.assert_allclose(values, [0.0, 5e-5, 1e-4, 5e-5, 0.0, 0.0], atol=1e-12)


def test_schedule_can_decay_from_step_0_as_google_research_does():
    # google-research: polynomial_decay(peak, step, total) replaced by the warm-up line before
    # warmup_steps: 1e-4 x (1 - 55 / 100) at step 55, 0.9 x peak right after warm-up.
    schedule = WarmupLinearDecay(peak=1e-4, total_steps=100, warmup_steps=10, decay_from="start")
    values = [float(schedule(s)) for s in (0, 5, 10, 55, 100, 150)]
    np.testing.assert_allclose(values, [0.0, 5e-5, 9e-5, 4.5e-5, 0.0, 0.0], atol=1e-12)
    assert WarmupLinearDecay.from_config(schedule.get_config()).decay_from == "start"


def test_create_optimizer_passes_the_decay_start_on():
    opt = create_optimizer(1e-4, 100, 10, "adamw_torch", lr_decay_from="start")
    assert float(opt.learning_rate) == 0.0
    assert float(opt._learning_rate(55)) == pytest.approx(4.5e-5)
    with pytest.raises(ValueError, match="decay_from"):
        create_optimizer(1e-4, 100, 10, lr_decay_from="middle")


def test_schedule_without_warmup_starts_at_peak():
    assert float(WarmupLinearDecay(2e-5, 10)(0)) == pytest.approx(2e-5)


def _variables():
    kernel = keras.Variable(np.array([[1.0, -2.0], [0.5, 3.0]], np.float32), name="kernel")
    bias = keras.Variable(np.array([0.1, -0.1], np.float32), name="bias")
    norm = keras.Variable(np.array([1.0, 1.0], np.float32), name="gamma")
    return kernel, bias, norm


def test_adamw_has_no_bias_correction_and_decays_only_weights():
    kernel, bias, gamma = _variables()
    opt = AdamWeightDecay(learning_rate=0.1, weight_decay=0.01, epsilon=1e-6,
                          exclude_from_weight_decay_paths=("bias", "gamma"))
    grads = [np.full((2, 2), 0.5, np.float32), np.full(2, 0.5, np.float32),
             np.full(2, 0.5, np.float32)]
    start = [v.numpy().copy() for v in (kernel, bias, gamma)]
    opt.apply(grads, [kernel, bias, gamma])
    # google-research, step 1: m = 0.1 g, v = 0.001 g^2, update = m / (sqrt(v) + eps), no
    # 1/(1 - beta^t) correction; decay lr * wd * w on the kernel only.
    m, v = 0.1 * 0.5, 0.001 * 0.25
    step = 0.1 * m / (np.sqrt(v) + 1e-6)
    # Tolerance: the fused kernel forms 1 - beta_2 from float32 0.999 (0.99900001), so v is
    # 1.3e-5 and the step 6.4e-6 smaller (relative) than with 0.001 exactly.
    np.testing.assert_allclose(kernel.numpy(), start[0] - 0.1 * 0.01 * start[0] - step, rtol=2e-5)
    np.testing.assert_allclose(bias.numpy(), start[1] - step, rtol=2e-5)
    np.testing.assert_allclose(gamma.numpy(), start[2] - step, rtol=2e-5)


def test_adamw_matches_google_research_over_several_steps_and_sparse_gradients():
    import tensorflow as tf
    rng = np.random.default_rng(0)
    table = keras.Variable(rng.normal(size=(4, 3)).astype(np.float32), name="embeddings")
    opt = AdamWeightDecay(learning_rate=0.01, weight_decay=0.1, epsilon=1e-6)
    w, m, v = table.numpy().astype(np.float64), np.zeros((4, 3)), np.zeros((4, 3))
    for _ in range(3):
        rows = rng.normal(size=(2, 3)).astype(np.float32)
        dense = np.zeros((4, 3))
        dense[[1, 3]] = rows
        opt.apply([tf.IndexedSlices(tf.constant(rows), tf.constant([1, 3]), tf.constant([4, 3]))],
                  [table])
        # google-research's AdamWeightDecayOptimizer.apply_gradients, in float64.
        m = 0.9 * m + 0.1 * dense
        v = 0.999 * v + 0.001 * dense ** 2
        w = w - 0.01 * (m / (np.sqrt(v) + 1e-6) + 0.1 * w)
    np.testing.assert_allclose(table.numpy(), w, rtol=2e-5, atol=1e-6)   # float32 beta_2, as above


# Gradients near epsilon (scale 1e-8) show where epsilon is added relative to the correction.
@pytest.mark.parametrize("scale", [1.0, 1e-8])
def test_adamw_torch_is_bias_corrected_like_torch_optim_adamw(scale):
    kernel = keras.Variable(np.array([[1.0, -2.0]], np.float32), name="kernel")
    opt = create_optimizer(0.01, 1000, 0, optimizer="adamw_torch")
    w, m, v = kernel.numpy().astype(np.float64), np.zeros((1, 2)), np.zeros((1, 2))
    for t, g in enumerate((np.array([[0.5, -0.1]]) * scale, np.array([[0.2, 0.3]]) * scale),
                          start=1):
        lr = 0.01 * (1 - (t - 1) / 1000)                  # the linear decay of step t - 1
        opt.apply([np.array(g, np.float32)], [kernel])
        # torch.optim.AdamW: decoupled decay, then bias-corrected moments, eps 1e-8.
        w = w - lr * 0.01 * w
        m = 0.9 * m + 0.1 * np.array(g)
        v = 0.999 * v + 0.001 * np.array(g) ** 2
        w = w - lr * (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-8)
    np.testing.assert_allclose(kernel.numpy(), w, rtol=1e-5)


def test_create_optimizer_excludes_layer_norm_and_bias_by_path():
    import bert_tf
    encoder = bert_tf.BertEncoder(bert_tf.BertConfig.from_preset("L-1_H-32_A-2", vocab_size=20))
    opt = create_optimizer(1e-3, 10, 1)
    opt.build(encoder.trainable_variables)
    decayed = {v.path for v in encoder.trainable_variables if opt._use_weight_decay(v)}
    assert "layer_0/attention/query/kernel" in decayed
    assert "embeddings/word_embeddings" in decayed
    assert not any("layer_norm" in p or p.endswith("bias") for p in decayed)


def test_create_optimizer_clips_by_global_norm_one():
    opt = create_optimizer(1e-3, 10, 1)
    assert opt.global_clipnorm == 1.0


def test_lamb_scales_the_update_by_the_trust_ratio():
    w = keras.Variable(np.array([3.0, 4.0], np.float32), name="kernel")   # ||w|| = 5
    opt = Lamb(learning_rate=0.1, weight_decay=0.0)
    opt.apply([np.array([1.0, 1.0], np.float32)], [w])
    # bias-corrected Adam direction is ~[1, 1] (norm sqrt 2); trust ratio 5 / sqrt 2
    expected = np.array([3.0, 4.0]) - 0.1 * (5 / np.sqrt(2)) * np.array([1.0, 1.0])
    np.testing.assert_allclose(w.numpy(), expected, rtol=1e-5)


def test_lamb_does_not_adapt_bias_or_layer_norm():
    b = keras.Variable(np.array([3.0, 4.0], np.float32), name="bias")
    opt = Lamb(learning_rate=0.1, weight_decay=0.01)
    opt.apply([np.array([1.0, 1.0], np.float32)], [b])
    np.testing.assert_allclose(b.numpy(), [2.9, 3.9], rtol=1e-5)


def test_unknown_optimizer_is_named():
    with pytest.raises(ValueError, match="sgd"):
        create_optimizer(1e-3, 10, 1, optimizer="sgd")


@pytest.mark.parametrize("name", ["adamw", "lamb"])
def test_sparse_gradients_are_clipped_and_applied_as_their_dense_sum(name):
    """Embedding gradients arrive as IndexedSlices, possibly with repeated rows; the optimisers
    densify them once before clipping. The result must equal the dense gradient's."""
    import tensorflow as tf
    rng = np.random.default_rng(3)
    start = rng.normal(size=(5, 3)).astype(np.float32)
    rows = (rng.normal(size=(3, 3)) * 4).astype(np.float32)           # global norm > 1: clipped
    ids = np.array([1, 4, 1])
    dense = np.zeros((5, 3), np.float32)
    np.add.at(dense, ids, rows)
    results = []
    for grad in (tf.IndexedSlices(tf.constant(rows), tf.constant(ids), tf.constant([5, 3])),
                 tf.constant(dense)):
        table = keras.Variable(start, name="word_embeddings")
        create_optimizer(0.01, 100, 0, optimizer=name).apply([grad], [table])
        results.append(table.numpy())
    assert np.linalg.norm(dense) > 1.0
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6, atol=1e-7)
    assert not np.allclose(results[0], start)
