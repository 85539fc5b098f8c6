"""Trainer with jit_compile: on one replica the gradients and the optimizer update compile into
one XLA program; it must train exactly like the uncompiled path."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf import BertConfig, BertEncoder, BertPretrainer
from bert_tf.objectives.pretraining import PretrainingObjective
from bert_tf.training.optimization import create_optimizer
from bert_tf.training.trainer import Trainer
from helpers import pretraining_features


def _train(jit_compile, optimizer, dtype="float32"):
    keras.utils.set_random_seed(5)
    config = BertConfig.from_preset("L-1_H-32_A-2", vocab_size=50, max_position_embeddings=16,
                                    hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model = BertPretrainer(BertEncoder(config, dtype=dtype))
    opt = create_optimizer(1e-3, 100, 2, optimizer=optimizer)
    if dtype == "mixed_float16":
        opt = keras.optimizers.LossScaleOptimizer(opt)
    trainer = Trainer(model, opt, PretrainingObjective(), jit_compile=jit_compile, steps_per_loop=3)
    features = pretraining_features()
    result = trainer.train(
        lambda ctx: tf.data.Dataset.from_tensor_slices(features).batch(8).repeat(), 6, 8)
    return trainer, result, [w.numpy() for w in model.trainable_weights]


@pytest.mark.parametrize("optimizer,dtype,atol", [
    # XLA reorders float32 sums (~1e-7 relative); after 6 steps of lr 1e-3 the weights measured
    # 4e-7 apart (AdamW) and 6e-8 (LAMB): 1e-5 leaves room without hiding a wrong update, which
    # would move weights by ~lr = 1e-3.
    ("adamw", "float32", 1e-5),
    ("lamb", "float32", 1e-5),
    # float16 activations round at 1e-3 relative; measured 7e-5 apart.
    ("adamw", "mixed_float16", 5e-4),
])
def test_xla_step_with_update_inside_matches_the_uncompiled_step(optimizer, dtype, atol):
    plain, plain_result, plain_weights = _train(False, optimizer, dtype)
    fused, fused_result, fused_weights = _train(True, optimizer, dtype)
    assert fused.fused_update and not plain.fused_update
    assert fused_result["step"] == plain_result["step"] == 6
    assert fused_result["loss"] == pytest.approx(plain_result["loss"], rel=1e-4)
    for a, b in zip(plain_weights, fused_weights):
        np.testing.assert_allclose(a, b, atol=atol)


def test_gradient_accumulation_under_xla_applies_outside_the_compiled_gradients():
    keras.utils.set_random_seed(5)
    config = BertConfig.from_preset("L-1_H-32_A-2", vocab_size=50, max_position_embeddings=16)
    trainer = Trainer(BertPretrainer(BertEncoder(config)), create_optimizer(1e-3, 10, 1),
                      PretrainingObjective(), jit_compile=True, gradient_accumulation_steps=2)
    features = pretraining_features()
    result = trainer.train(
        lambda ctx: tf.data.Dataset.from_tensor_slices(features).batch(8).repeat(), 2, 8)
    assert not trainer.fused_update
    assert result["step"] == 2 and np.isfinite(result["loss"])
