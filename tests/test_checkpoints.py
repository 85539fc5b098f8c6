"""Checkpoints: real HuggingFace weights, google-research TF1 names, native format, converter."""

import json

import numpy as np
import pytest
import tensorflow as tf

import bert_tf
from bert_tf import BertClassifier, BertConfig, BertEncoder, BertPretrainer, BertSpanLabeler
from bert_tf.checkpoints import (CheckpointError, extract, load_weights, read_tf1, save_weights,
                                 write_tf1)
from bert_tf.convert import main as convert_main
from helpers import minilm_dir

TINY = BertConfig.from_preset("L-2_H-32_A-2", vocab_size=50, max_position_embeddings=16)


def google_names(num_layers):
    """The variable names google-research/bert's modeling.py creates, written out independently."""
    names = ["bert/embeddings/word_embeddings", "bert/embeddings/token_type_embeddings",
             "bert/embeddings/position_embeddings", "bert/embeddings/LayerNorm/gamma",
             "bert/embeddings/LayerNorm/beta", "bert/pooler/dense/kernel",
             "bert/pooler/dense/bias"]
    for i in range(num_layers):
        p = f"bert/encoder/layer_{i}/"
        for sub in ("attention/self/query", "attention/self/key", "attention/self/value",
                    "attention/output/dense", "intermediate/dense", "output/dense"):
            names += [p + sub + "/kernel", p + sub + "/bias"]
        for sub in ("attention/output/LayerNorm", "output/LayerNorm"):
            names += [p + sub + "/gamma", p + sub + "/beta"]
    return sorted(names)


def feed(ref):
    return {"input_ids": ref["input_ids"], "input_mask": ref["attention_mask"],
            "segment_ids": ref["token_type_ids"]}


def small_inputs():
    ids = np.array([[2, 7, 9, 4, 0, 0], [3, 5, 8, 11, 12, 6]], np.int32)
    return {"input_ids": ids, "input_mask": (ids > 0).astype(np.int32),
            "segment_ids": np.array([[0, 0, 1, 1, 0, 0], [0, 0, 0, 1, 1, 1]], np.int32)}


# ------------------------------------------------------------------ real weights
def test_minilm_matches_reference_activations(minilm_encoder, minilm_reference):
    out = minilm_encoder(feed(minilm_reference))
    for i in range(14):
        stored = minilm_reference[f"hidden_states_{i:02d}"]              # [7, L, 384]
        length = stored.shape[1]
        ours = [out["embedding_output"][i, :length]] + [h[i, :length]
                                                         for h in out["encoder_outputs"]]
        for layer in range(7):
            np.testing.assert_allclose(ours[layer], stored[layer], atol=1e-4, rtol=0,
                                       err_msg=f"example {i}, hidden state {layer}")
    np.testing.assert_allclose(out["pooled_output"], minilm_reference["pooler_output"],
                               atol=1e-4, rtol=0)


def test_minilm_load_report_is_complete(minilm_encoder):
    report = minilm_encoder.load_report
    assert len(report.loaded) == 5 + 6 * 16 + 2
    assert report.missing == [] and report.unexpected == [] and report.mismatched == []
    assert minilm_encoder.config.hidden_act == "gelu"  # HF "gelu" is the exact form


# ------------------------------------------------------------------ google-research TF1
def test_tf1_round_trip_uses_google_names(minilm_encoder, minilm_reference, tmp_path):
    prefix = save_weights(minilm_encoder, tmp_path / "tf1", "tf1")
    assert prefix.endswith("bert_model.ckpt")
    assert sorted(read_tf1(prefix)) == google_names(6)
    restored = bert_tf.load_encoder(prefix)
    x = feed(minilm_reference)
    np.testing.assert_array_equal(restored(x)["sequence_output"],
                                  minilm_encoder(x)["sequence_output"])
    np.testing.assert_array_equal(restored(x)["pooled_output"], minilm_encoder(x)["pooled_output"])
    written = json.loads((tmp_path / "tf1" / "bert_config.json").read_text())
    assert written["hidden_size"] == 384 and written["hidden_act"] == "gelu"


def test_written_tf1_checkpoint_loads_with_tf1_init_from_checkpoint(tmp_path):
    """google-research's runners call tf.train.init_from_checkpoint on variables they create with
    these names and shapes; do exactly that in a TF1 graph."""
    encoder = BertEncoder(TINY)
    arrays = extract(encoder)
    prefix = save_weights(encoder, tmp_path, "tf1")
    graph = tf.Graph()
    with graph.as_default():
        tf1_vars = {n: tf.compat.v1.get_variable(n, shape=a.shape, dtype=tf.float32)
                    for n, a in arrays.items()}
        tf.compat.v1.train.init_from_checkpoint(prefix, {n: n for n in arrays})
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            values = sess.run(tf1_vars)
    for name, value in values.items():
        np.testing.assert_array_equal(value, arrays[name], err_msg=name)


def test_reads_a_tf1_saver_checkpoint_with_optimizer_slots(tmp_path):
    encoder = BertEncoder(TINY)
    arrays = extract(encoder)
    graph = tf.Graph()
    with graph.as_default():
        for name, value in arrays.items():
            tf.compat.v1.get_variable(name, initializer=tf.constant(value))
            tf.compat.v1.get_variable(name + "/adam_m", initializer=tf.zeros(value.shape))
            tf.compat.v1.get_variable(name + "/adam_v", initializer=tf.zeros(value.shape))
        tf.compat.v1.train.get_or_create_global_step()
        saver = tf.compat.v1.train.Saver()
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            prefix = saver.save(sess, str(tmp_path / "model.ckpt"), global_step=7)
    TINY.to_json_file(tmp_path / "bert_config.json")
    restored = bert_tf.load_encoder(tmp_path)          # folder: latest checkpoint via state file
    assert restored.load_report.unexpected == []
    assert prefix.endswith("model.ckpt-7")
    x = small_inputs()
    np.testing.assert_array_equal(restored(x)["pooled_output"], encoder(x)["pooled_output"])


def test_missing_tf1_variable_is_named(tmp_path):
    arrays = extract(BertEncoder(TINY))
    del arrays["bert/encoder/layer_1/attention/self/key/bias"]
    write_tf1(arrays, str(tmp_path / "bert_model.ckpt"))
    with pytest.raises(CheckpointError, match="layer_1/attention/self/key/bias"):
        bert_tf.load_encoder(str(tmp_path / "bert_model.ckpt"), config=TINY)


def test_wrong_shape_names_variable_and_both_shapes(tmp_path):
    arrays = extract(BertEncoder(TINY))
    arrays["bert/encoder/layer_0/intermediate/dense/kernel"] = np.zeros((32, 64), np.float32)
    write_tf1(arrays, str(tmp_path / "bert_model.ckpt"))
    with pytest.raises(CheckpointError, match=r"layer_0/intermediate/dense/kernel: "
                                              r"checkpoint \(32, 64\) vs model \(32, 128\)"):
        bert_tf.load_encoder(str(tmp_path / "bert_model.ckpt"), config=TINY)


def test_classifier_head_uses_run_classifier_names_transposed(tmp_path):
    model = BertClassifier(BertEncoder(TINY), num_classes=3)
    arrays = extract(model)
    assert arrays["output_weights"].shape == (3, 32)       # [num_labels, hidden] as google
    np.testing.assert_array_equal(arrays["output_weights"], model.classifier.dense.kernel.numpy().T)
    prefix = save_weights(model, tmp_path, "tf1")
    fresh = BertClassifier(BertEncoder(TINY), num_classes=3)
    report = load_weights(fresh, prefix, require_heads=True)
    assert report.missing == []
    x = small_inputs()
    np.testing.assert_array_equal(fresh(x)["logits"], model(x)["logits"])


def test_squad_head_uses_cls_squad_names(tmp_path):
    model = BertSpanLabeler(BertEncoder(TINY))
    names = set(extract(model))
    assert {"cls/squad/output_weights", "cls/squad/output_bias"} <= names


def test_pretraining_heads_use_google_names_and_load_back(tmp_path):
    model = BertPretrainer(BertEncoder(TINY))
    heads = {n for n in extract(model) if not n.startswith("bert/")}
    assert heads == {"cls/predictions/transform/dense/kernel",
                     "cls/predictions/transform/dense/bias",
                     "cls/predictions/transform/LayerNorm/gamma",
                     "cls/predictions/transform/LayerNorm/beta", "cls/predictions/output_bias",
                     "cls/seq_relationship/output_weights", "cls/seq_relationship/output_bias"}
    prefix = save_weights(model, tmp_path, "tf1")
    fresh = BertPretrainer(BertEncoder(TINY))
    assert load_weights(fresh, prefix, require_heads=True).missing == []
    x = dict(small_inputs(), masked_lm_positions=np.array([[1, 2], [3, 4]], np.int32))
    np.testing.assert_array_equal(fresh(x)["mlm_logits"], model(x)["mlm_logits"])


def test_encoder_only_checkpoint_reports_fresh_heads(tmp_path):
    prefix = save_weights(BertEncoder(TINY), tmp_path, "tf1")
    report = load_weights(BertPretrainer(BertEncoder(TINY)), prefix)
    assert "cls/predictions/output_bias" in report.missing
    assert "cls/seq_relationship/output_weights" in report.missing
    assert "freshly initialised" in report.summary()


def test_unused_checkpoint_heads_are_reported_as_unexpected(tmp_path):
    prefix = save_weights(BertPretrainer(BertEncoder(TINY)), tmp_path, "tf1")
    report = load_weights(BertEncoder(TINY), prefix)
    assert "cls/predictions/output_bias" in report.unexpected


# ------------------------------------------------------------------ HuggingFace
@pytest.mark.parametrize("build, architecture, task, units", [
    (lambda: BertClassifier(BertEncoder(TINY), 3), "BertForSequenceClassification",
     "classifier", 3),
    (lambda: BertClassifier(BertEncoder(TINY), 1), "BertForSequenceClassification",
     "regression", 1),
    (lambda: bert_tf.BertTokenClassifier(BertEncoder(TINY), 5), "BertForTokenClassification",
     "tagger", 5),
    (lambda: bert_tf.BertMultipleChoice(BertEncoder(TINY)), "BertForMultipleChoice",
     "multiple_choice", 1),
    (lambda: BertSpanLabeler(BertEncoder(TINY)), "BertForQuestionAnswering", "squad", 2),
    (lambda: BertPretrainer(BertEncoder(TINY)), "BertForPreTraining", "pretraining", None),
    (lambda: BertEncoder(TINY), "BertModel", "encoder", None),
])
def test_hf_config_names_the_task_models_class(tmp_path, build, architecture, task, units):
    """transformers' Auto classes and bert_tf.predict read the head from `architectures`
    (a classifier's label count from id2label)."""
    from bert_tf.prediction.loading import checkpoint_head
    folder = save_weights(build(), tmp_path / "hf", "hf")
    config = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert config["architectures"] == [architecture]
    if architecture in ("BertForSequenceClassification", "BertForTokenClassification"):
        assert len(config["id2label"]) == units
    assert checkpoint_head(folder)[:2] == (task, units)


def test_hf_write_read_round_trip_with_heads(tmp_path):
    from safetensors.numpy import load_file
    model = BertPretrainer(BertEncoder(TINY))
    folder = save_weights(model, tmp_path / "hf", "hf")
    names = set(load_file(str(tmp_path / "hf" / "model.safetensors")))
    assert "bert.encoder.layer.1.attention.self.query.weight" in names
    assert {"cls.predictions.bias", "cls.seq_relationship.weight"} <= names
    fresh = BertPretrainer(BertEncoder(TINY))
    assert load_weights(fresh, folder, require_heads=True).missing == []
    x = dict(small_inputs(), masked_lm_positions=np.array([[1, 2], [3, 4]], np.int32))
    np.testing.assert_array_equal(fresh(x)["nsp_logits"], model(x)["nsp_logits"])


@pytest.fixture(scope="module")
def minilm_without_pooler(tmp_path_factory):
    """all-MiniLM-L6-v2 saved as transformers saves BertForQuestionAnswering and
    BertForTokenClassification: "bert."-prefixed encoder tensors and no `pooler.*`."""
    import shutil

    from safetensors.numpy import load_file, save_file
    folder = tmp_path_factory.mktemp("minilm_without_pooler")
    tensors = load_file(str(minilm_dir() / "model.safetensors"))
    save_file({f"bert.{name}": value for name, value in tensors.items()
               if not name.startswith("pooler.")}, str(folder / "model.safetensors"))
    shutil.copyfile(minilm_dir() / "config.json", folder / "config.json")
    return folder


@pytest.mark.parametrize("build", [BertSpanLabeler,
                                   lambda encoder: bert_tf.BertTokenClassifier(encoder, 3)])
def test_span_and_token_models_load_a_hf_folder_without_the_pooler_they_never_read(
        minilm_without_pooler, minilm_encoder, build):
    model = build(BertEncoder(minilm_encoder.config))
    report = load_weights(model, minilm_without_pooler)
    pooler = ["bert/pooler/dense/kernel", "bert/pooler/dense/bias"]
    assert report.absent_unused == pooler
    assert all(name.startswith("cls/") for name in report.missing)     # the fresh head only
    assert "not in checkpoint, unused by this model: " + ", ".join(pooler) in report.summary()
    expected = extract(minilm_encoder)
    loaded = extract(model.encoder)
    for name in expected:
        if name not in pooler:
            np.testing.assert_array_equal(loaded[name], expected[name], err_msg=name)


@pytest.mark.parametrize("build", [lambda encoder: BertClassifier(encoder, 2), BertPretrainer,
                                   lambda encoder: encoder])
def test_models_that_read_the_pooler_name_it_when_the_folder_has_none(minilm_without_pooler,
                                                                      minilm_encoder, build):
    model = build(BertEncoder(minilm_encoder.config))
    with pytest.raises(CheckpointError, match=r"missing required variables: "
                       r"bert/pooler/dense/kernel, bert/pooler/dense/bias \(the pooler, which "
                       r"this model reads: a HuggingFace BertForQuestionAnswering"):
        load_weights(model, minilm_without_pooler)


# ------------------------------------------------------------------ native
def test_native_round_trip(tmp_path):
    encoder = BertEncoder(TINY)
    save_weights(encoder, tmp_path, "native")
    restored = bert_tf.load_encoder(tmp_path)
    x = small_inputs()
    np.testing.assert_array_equal(restored(x)["sequence_output"], encoder(x)["sequence_output"])


def test_encoder_loads_from_a_training_checkpoint(tmp_path):
    """run_pretraining's CheckpointManager writes model + optimizer + step; the encoder part of
    it initialises other models."""
    import keras
    model = BertPretrainer(BertEncoder(TINY))
    optimizer = keras.optimizers.Adam()
    optimizer.build(model.trainable_variables)
    ckpt = tf.train.Checkpoint(model=model, optimizer=optimizer, step=tf.Variable(3))
    manager = tf.train.CheckpointManager(ckpt, str(tmp_path), max_to_keep=1)
    manager.save()
    TINY.to_json_file(tmp_path / "bert_config.json")
    restored = bert_tf.load_encoder(tmp_path)
    x = small_inputs()
    np.testing.assert_array_equal(restored(x)["pooled_output"],
                                  model.encoder(x)["pooled_output"])


def test_a_classifier_loads_from_a_checkpoint_that_files_its_variables_elsewhere(tmp_path):
    """A variable reachable from several objects is saved once, under the first path the saver
    meets (the runner's XLA training checkpoints file the model's under optimizer/...): the
    head is still found, through the object graph."""
    model = BertClassifier(BertEncoder(TINY), 3)
    holder = tf.Module()
    holder.variables_first = list(model.variables)
    prefix = tf.train.Checkpoint(a_holder=holder, model=model).write(str(tmp_path / "ckpt"))
    assert not any(n.startswith("model/classifier/") for n, _ in tf.train.list_variables(prefix))
    TINY.to_json_file(tmp_path / "bert_config.json")
    restored = BertClassifier(BertEncoder(TINY), 3)
    load_weights(restored, prefix, require_heads=True)
    x = small_inputs()
    np.testing.assert_array_equal(restored(x)["logits"], model(x)["logits"])


# ------------------------------------------------------------------ converter
@pytest.mark.parametrize("chain", [("tf1", "hf"), ("native", "tf1")])
def test_converter_cli_chain_preserves_outputs(minilm_encoder, minilm_reference, tmp_path, chain):
    src = str(minilm_dir())
    for i, fmt in enumerate(chain):
        dst = str(tmp_path / f"{i}_{fmt}")
        assert convert_main([src, dst, "--to", fmt]) == 0
        src = dst
    assert (tmp_path / f"1_{chain[1]}" / "vocab.txt").exists()
    restored = bert_tf.load_encoder(src)
    x = feed(minilm_reference)
    np.testing.assert_array_equal(restored(x)["sequence_output"],
                                  minilm_encoder(x)["sequence_output"])


def test_converter_reports_a_missing_source(tmp_path, capsys):
    assert convert_main([str(tmp_path / "nope"), str(tmp_path / "out"), "--to", "hf",
                         "--config", str(minilm_dir() / "config.json")]) == 1
    assert "nope" in capsys.readouterr().err
