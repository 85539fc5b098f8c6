"""--freeze_encoder / --freeze_layers (bert_tf.training.setup.build_trainer): frozen weights keep
their values through training steps, the others change, and checkpoints still hold and restore
every variable."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf import BertConfig
from bert_tf.training.setup import arrays_dataset_fn, build_trainer
from bert_tf.jobs.finetune import FinetuneOptions
from bert_tf.objectives.tagging import TaggingObjective

CONFIG = BertConfig.from_preset("L-2_H-32_A-2", vocab_size=200, max_position_embeddings=32)


def _features(n=32, seq=16, labels=3):
    rng = np.random.default_rng(0)
    ids = rng.integers(5, CONFIG.vocab_size, (n, seq)).astype(np.int32)
    return {"input_ids": ids, "input_mask": np.ones_like(ids),
            "segment_ids": np.zeros_like(ids),
            "label_ids": (ids % labels).astype(np.int32),
            "label_weights": np.ones((n, seq), np.float32)}


def _build(tmp_path, **freezing):
    from bert_tf.model import BertEncoder, BertTokenClassifier
    keras.utils.set_random_seed(3)
    opts = FinetuneOptions(config=CONFIG, output_dir=str(tmp_path), do_train=True,
                           learning_rate=1e-2, iterations_per_loop=4, save_checkpoints_steps=4,
                           **freezing)
    opts.validate_evaluation()
    return build_trainer(opts, tf.distribute.get_strategy(),
                         lambda: BertTokenClassifier(BertEncoder(CONFIG), 3), TaggingObjective(),
                         num_train_steps=4)


def _values(weights):
    return {w.path: w.numpy().copy() for w in weights}


def _train(setup, steps=4):
    before = _values(setup.model.weights)
    setup.trainer.train(arrays_dataset_fn(_features(), 8, True, seed=1), steps, 8)
    after = _values(setup.model.weights)
    return {path: not np.array_equal(before[path], after[path]) for path in before}


def test_freeze_encoder_trains_the_head_only_and_checkpoints_keep_every_weight(tmp_path,
                                                                               caplog):
    caplog.set_level("INFO", logger="bert_tf")
    setup = _build(tmp_path, freeze_encoder=True)
    model = setup.model
    encoder_paths = {w.path for w in model.encoder.weights}
    assert encoder_paths and not any(w.trainable for w in model.encoder.weights)
    assert {w.path for w in model.trainable_variables} == {w.path for w in model.tagger.weights}
    changed = _train(setup)
    assert not any(changed[p] for p in encoder_paths)
    assert all(changed[w.path] for w in model.tagger.weights)
    assert "frozen: the whole encoder; 2 weights (99 parameters) trainable" in caplog.text

    # The checkpoint holds the frozen weights too, and restores them into a fresh model.
    names = {name for name, _ in tf.train.list_variables(str(tmp_path))}
    assert any("embeddings" in n and "word_embeddings" in n for n in names)
    assert any("layer_1" in n for n in names)
    fresh = _build(tmp_path / "other", freeze_encoder=True)
    for w in fresh.model.weights:
        w.assign(tf.zeros_like(w))
    fresh.trainer.checkpoint.restore(tf.train.latest_checkpoint(str(tmp_path))).expect_partial()
    trained = _values(model.weights)
    for w in fresh.model.weights:
        np.testing.assert_array_equal(w.numpy(), trained[w.path], err_msg=w.path)


def test_freeze_layers_keeps_embeddings_and_the_first_layers(tmp_path):
    setup = _build(tmp_path, freeze_layers=1)
    encoder = setup.model.encoder
    changed = _train(setup)
    frozen = encoder.embeddings.weights + encoder.layer_0.weights
    assert frozen and not any(changed[w.path] for w in frozen)
    assert all(changed[w.path] for w in encoder.layer_1.weights)
    assert all(changed[w.path] for w in setup.model.tagger.weights)


def test_freeze_layers_cannot_exceed_the_model_layers(tmp_path):
    with pytest.raises(ValueError, match="--freeze_layers=3 but the model has 2 layers"):
        _build(tmp_path, freeze_layers=3)


def test_freeze_encoder_and_freeze_layers_exclude_each_other(tmp_path):
    with pytest.raises(ValueError, match="not both"):
        _build(tmp_path, freeze_encoder=True, freeze_layers=1)
