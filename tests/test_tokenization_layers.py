"""In-graph Keras layers: equal to the Python tokenizer, usable in tf.data, saved with .keras
and as SavedModels (vocabulary as an asset, only ops stock TF Serving has)."""

import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf import tokenization
from bert_tf.tokenization import serving_ops
from tests.helpers import shared_path

SEQ = 32


@pytest.fixture(scope="module")
def vocab_file():
    return str(shared_path("data/reference/vocab.txt"))


@pytest.fixture(scope="module")
def python_tokenizer(vocab_file):
    return tokenization.FullTokenizer(vocab_file, do_lower_case=True, graph_min_batch=None)


@pytest.fixture(scope="module")
def mrpc_pairs():
    with open(shared_path("data/glue/MRPC/dev.tsv"), encoding="utf-8-sig") as f:
        rows = [line.rstrip("\n").split("\t") for line in f][1:]
    return [r[3] for r in rows[:200]], [r[4] for r in rows[:200]]


@pytest.fixture(scope="module")
def preprocessor(vocab_file):
    return tokenization.BertPreprocessor(vocab_file, seq_length=SEQ)


def _google_features(tok, text_a, text_b, seq_length):
    """run_classifier.py's convert_single_example: tokens, truncation, layout, zero padding."""
    a, b = tok.tokenize(text_a), tok.tokenize(text_b)
    while len(a) + len(b) > seq_length - 3:
        (a if len(a) > len(b) else b).pop()
    tokens = ["[CLS]"] + a + ["[SEP]"] + b + ["[SEP]"]
    segment = [0] * (len(a) + 2) + [1] * (len(b) + 1)
    pad = [0] * (seq_length - len(tokens))
    return (tok.convert_tokens_to_ids(tokens) + pad, [1] * len(tokens) + pad, segment + pad)


def test_preprocessor_equals_google_features_on_mrpc(preprocessor, python_tokenizer,
                                                     mrpc_pairs):
    out = preprocessor((tf.constant(mrpc_pairs[0]), tf.constant(mrpc_pairs[1])))
    expected = [_google_features(python_tokenizer, a, b, SEQ) for a, b in zip(*mrpc_pairs)]
    assert out["input_ids"].numpy().tolist() == [e[0] for e in expected]
    assert out["input_mask"].numpy().tolist() == [e[1] for e in expected]
    assert out["segment_ids"].numpy().tolist() == [e[2] for e in expected]
    assert {v.dtype for v in out.values()} == {tf.int32}


def test_tokenizer_layer_equals_python(vocab_file, python_tokenizer, mrpc_pairs):
    layer = tokenization.BertTokenizerLayer(vocab_file)
    ids = layer(tf.constant(mrpc_pairs[0]))
    assert ids.dtype == tf.int32
    assert ids.to_list() == [python_tokenizer.encode(t) for t in mrpc_pairs[0]]
    tokens = layer.id_to_token(ids[:2])  # through the vocabulary asset table
    assert [[t.decode() for t in row] for row in tokens.to_list()] == [
        python_tokenizer.tokenize(t) for t in mrpc_pairs[0][:2]]


def test_layers_work_inside_tf_data(preprocessor, vocab_file):
    texts = ["Hello, world!", "Ünïcödé tèxt, ΣΊΣΥΦΟΣ"]
    per_example = tf.data.Dataset.from_tensor_slices(texts).map(preprocessor)
    batched = tf.data.Dataset.from_tensor_slices(texts).batch(2).map(preprocessor)
    one = np.stack([x["input_ids"] for x in per_example.as_numpy_iterator()])
    both = next(batched.as_numpy_iterator())["input_ids"]
    np.testing.assert_array_equal(one, both)
    np.testing.assert_array_equal(both, preprocessor(tf.constant(texts))["input_ids"])
    layer = tokenization.BertTokenizerLayer(vocab_file, with_offsets=True)
    rows = list(tf.data.Dataset.from_tensor_slices(texts).map(layer).as_numpy_iterator())
    assert rows[0]["token_ids"].tolist() == [7592, 1010, 2088, 999]
    assert rows[0]["start_offsets"].tolist() == [0, 5, 7, 12]


def test_layers_of_one_vocabulary_share_a_tokenizer_traced_once(vocab_file, tmp_path):
    """Each dataset map calls the same traced graph instead of building ~3,000 ops again; it
    holds no stateful op, so an iterator over such a map can still be checkpointed."""
    first = tokenization.BertPreprocessor(vocab_file, seq_length=SEQ)
    second = tokenization.BertPreprocessor(vocab_file, seq_length=SEQ)
    assert first.tokenizer._wordpiece is second.tokenizer._wordpiece
    texts = ["Hello, world!", "Ünïcödé tèxt"]
    datasets = [tf.data.Dataset.from_tensor_slices(texts).batch(2).map(p) for p in (first, second)]
    traced = first.tokenizer._wordpiece._traced[False]
    assert traced.experimental_get_tracing_count() == 1
    graph = traced.get_concrete_function().graph
    assert not [op.type for op in graph.get_operations() if op._is_stateful]
    iterator = iter(datasets[1])
    tf.train.Checkpoint(iterator=iterator).save(str(tmp_path / "ckpt"))
    np.testing.assert_array_equal(next(iterator)["input_ids"],
                                  first((tf.constant(texts)))["input_ids"])


def test_offsets_are_packed_per_segment(vocab_file):
    pre = tokenization.BertPreprocessor(vocab_file, seq_length=10, with_offsets=True)
    out = pre((tf.constant(["Où est-il?"]), tf.constant(["Là."])))
    # [CLS] ou est - il ? [SEP] la . [SEP]; offsets are UTF-8 byte spans ("ù" is 2 bytes).
    assert out["input_ids"][0].numpy().tolist() == [101, 15068, 9765, 1011, 6335, 1029, 102,
                                                    2474, 1012, 102]
    assert out["start_offsets"][0].numpy().tolist() == [-1, 0, 4, 7, 8, 10, -1, 0, 3, -1]
    assert out["end_offsets"][0].numpy().tolist() == [-1, 3, 7, 8, 10, 11, -1, 3, 4, -1]


def test_keras_file_round_trip(preprocessor, tmp_path, mrpc_pairs):
    a = keras.Input(shape=(), dtype="string")
    b = keras.Input(shape=(), dtype="string")
    model = keras.Model([a, b], preprocessor((a, b)))
    path = str(tmp_path / "pre.keras")
    model.save(path)
    restored = keras.saving.load_model(path)
    inputs = [tf.constant(mrpc_pairs[0][:20]), tf.constant(mrpc_pairs[1][:20])]
    want, got = model(inputs), restored(inputs)
    for key in want:
        np.testing.assert_array_equal(want[key], got[key])
    layer = restored.layers[-1]
    assert layer.get_config()["seq_length"] == SEQ
    assert layer.tokenizer.vocabulary.id_to_token == preprocessor.tokenizer.vocabulary.id_to_token
    # The SavedModel asset must outlive the temporary folder Keras loaded from.
    assert os.path.exists(layer.tokenizer.vocab_asset.asset_path.numpy().decode())


def test_tokenizer_layer_config_round_trip(vocab_file, tmp_path):
    layer = tokenization.BertTokenizerLayer(vocab_file, lower_case=False, with_offsets=True)
    layer.save_assets(str(tmp_path))
    clone = tokenization.BertTokenizerLayer.from_config(layer.get_config())
    with pytest.raises(ValueError, match="no vocabulary"):
        clone(tf.constant(["x"]))
    clone.load_assets(str(tmp_path))
    text = tf.constant(["Hello World, Ünïcödé"])
    for key, value in layer(text).items():
        assert clone(text)[key].to_list() == value.to_list()


def test_saved_model_has_vocab_asset_and_serving_ops_only(vocab_file, tmp_path, mrpc_pairs):
    pre = tokenization.BertPreprocessor(vocab_file, seq_length=SEQ, with_offsets=True)
    module = tf.Module()
    module.preprocessor = pre
    module.serve = tf.function(lambda a, b: pre((a, b)),
                               input_signature=[tf.TensorSpec([None], tf.string)] * 2)
    export = str(tmp_path / "saved")
    tf.saved_model.save(module, export, signatures={"serving_default": module.serve})
    with open(os.path.join(export, "assets", "vocab.txt"), encoding="utf-8") as f:
        assert f.read().split("\n")[:-1] == pre.tokenizer.vocabulary.id_to_token

    ops = serving_ops.saved_model_op_types(export)
    assert serving_ops.non_core_ops(ops) == serving_ops.TF_TEXT_OPS
    assert serving_ops.unsupported_serving_ops(ops) == set()

    loaded = tf.saved_model.load(export).signatures["serving_default"]
    inputs = [tf.constant(mrpc_pairs[0][:30]), tf.constant(mrpc_pairs[1][:30])]
    got, want = loaded(a=inputs[0], b=inputs[1]), pre(tuple(inputs))
    for key in want:
        np.testing.assert_array_equal(got[key], want[key])


def test_temporary_vocabulary_file_is_removed_when_the_process_exits():
    # A layer built from a token list writes them to a temporary file; it must not outlive
    # the process (test runs and training jobs left hundreds of these in /tmp). The process is
    # forked from the warm fork server (bert_tf.processes, no 5 s import); it leaves as an
    # interpreter does, through its atexit handlers.
    import sys

    from bert_tf import processes
    code = ("from bert_tf.tokenization.layers import BertTokenizerLayer\n"
            "layer = BertTokenizerLayer(['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]', 'a'])\n"
            "print(layer.vocab_asset.asset_path.numpy().decode())\n")
    done = processes.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    path = done.stdout.strip().splitlines()[-1]
    assert os.path.basename(os.path.dirname(path)).startswith("bert_tf_vocab_")
    assert not os.path.exists(os.path.dirname(path))
