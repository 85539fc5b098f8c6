"""Bad requests against loaded SavedModels: each gets a clear error (InvalidArgument naming the
input, as TF Serving returns it) or a defined result, and the model keeps serving after it."""

import numpy as np
import pytest
import tensorflow as tf

import test_serving_support as support

# Slow as a whole: the exports these tests read are built by the first test of a worker that
# needs them (test_serving_support's process-wide cache, not a fixture the profile could time).
pytestmark = pytest.mark.slow

LONG_TEXT = " ".join(["antidisestablishmentarianism"] * 200)     # far past max_seq_length


def _call(kind, signature, **inputs):
    function = support.loaded(kind).signatures[signature]
    return {k: v.numpy() for k, v in function(**inputs).items()}


def _features(rows=2, seq=support.SEQ, **overrides):
    features = support.classifier_features(support.mrpc_pairs(rows)[0], seq_length=seq)
    features.update(overrides)
    return {k: tf.constant(v) for k, v in features.items()}


# ----------------------------------------------------------------------------- wrong dtype
def test_wrong_dtype_for_text_is_rejected():
    with pytest.raises((TypeError, ValueError, tf.errors.InvalidArgumentError),
                       match="(?i)string|dtype"):
        _call("classifier", "serving_default", text_a=tf.constant([1, 2]),
              text_b=tf.constant([3, 4]))


def test_wrong_dtype_for_features_is_rejected():
    features = _features()
    features["input_ids"] = tf.cast(features["input_ids"], tf.float32)
    with pytest.raises((TypeError, ValueError, tf.errors.InvalidArgumentError),
                       match="(?i)int32|dtype"):
        _call("classifier", "serve_features", **features)


def test_wrong_rank_is_rejected_by_name():
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"text_b \[2,1\] is not compatible with expected shape \[\?\]"):
        _call("classifier", "serving_default", text_a=tf.constant(["a", "b"]),
              text_b=tf.constant([["c"], ["d"]]))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"input_ids \[64\] is not"):
        _call("classifier", "serve_features", input_ids=tf.zeros([64], tf.int32),
              input_mask=tf.ones([1, 64], tf.int32), segment_ids=tf.zeros([1, 64], tf.int32))


def test_missing_input_is_rejected():
    with pytest.raises(TypeError, match="text_b"):
        _call("classifier", "serving_default", text_a=tf.constant(["only one text"]))


# ----------------------------------------------------------------------------- empty batch
def test_empty_batch_gives_empty_outputs():
    empty = tf.constant([], tf.string)
    out = _call("classifier", "serving_default", text_a=empty, text_b=empty)
    assert out["logits"].shape == (0, 2) and out["label"].shape == (0,)
    out = _call("squad", "serving_default", question=empty, context=empty)
    assert out["answer_text"].shape == out["num_windows"].shape == (0,)
    out = _call("tagger", "serve_features", **_features(rows=0))
    assert out["label"].shape == (0, support.SEQ)
    assert _call("classifier", "serve_examples", examples=empty)["logits"].shape == (0, 2)


# ----------------------------------------------------------------------------- empty strings
def test_empty_strings_are_classified_as_the_empty_input():
    out = _call("classifier", "serving_default", text_a=tf.constant(["", "Hello."]),
                text_b=tf.constant(["", ""]))
    expected = support.keras_outputs(support.exported("classifier")[0],
                                     support.classifier_features(["", "Hello."], ["", ""]))
    np.testing.assert_allclose(out["logits"], expected["logits"], rtol=1e-4, atol=1e-5)


def test_empty_context_has_no_answer():
    out = _call("squad", "serving_default", question=tf.constant(["Who?", ""]),
                context=tf.constant(["", ""]))
    assert list(out["answer_text"]) == [b"", b""]
    assert list(out["answer_start"]) == [-1, -1] and list(out["answer_end"]) == [-1, -1]
    assert list(out["answer_token_start"]) == [-1, -1] and list(out["score"]) == [0.0, 0.0]
    assert list(out["answer_window"]) == [-1, -1]
    assert list(out["num_windows"]) == [1, 1]       # the question alone: no context token


def test_empty_text_tags_nothing():
    out = _call("tagger", "serving_default", text_a=tf.constant([""]))
    assert list(out["tokens"][0][:3]) == [b"[CLS]", b"[SEP]", b""]
    assert (out["label"] == b"").all() and (out["token_start_offsets"] == -1).all()


# ----------------------------------------------------------------------------- too long
def test_text_longer_than_max_seq_length_is_truncated_like_run_classifier():
    a, b = LONG_TEXT, "A short second sentence."
    out = _call("classifier", "serving_default", text_a=tf.constant([a]), text_b=tf.constant([b]))
    expected = support.keras_outputs(support.exported("classifier")[0],
                                     support.classifier_features([a], [b]))
    np.testing.assert_allclose(out["logits"], expected["logits"], rtol=1e-4, atol=1e-5)


def test_long_context_is_read_in_windows():
    context = "The answer is at the start. " + LONG_TEXT
    out = _call("squad", "serving_default", question=tf.constant(["Where is the answer?"]),
                context=tf.constant([context]))
    assert out["num_windows"][0] > 1
    assert 0 <= out["answer_window"][0] < out["num_windows"][0]
    assert 0 <= out["answer_start"][0] < out["answer_end"][0] <= len(context)


def test_long_question_keeps_max_query_length_tokens():
    """The cut question leaves seq_length - 3 - max_query_length context tokens per window."""
    question = " ".join(["why"] * 100)
    room = support.SQUAD_SEQ - 3 - support.SQUAD_QUERY
    out = _call("squad", "serving_default", question=tf.constant([question] * 2),
                context=tf.constant([" ".join(["word"] * n) for n in (room, room + 1)]))
    assert out["num_windows"].tolist() == [1, 2]


def test_long_text_tags_the_first_tokens():
    out = _call("tagger", "serving_default", text_a=tf.constant([LONG_TEXT]))
    assert (out["label"][0][1:-1] != b"").all() and out["label"][0][-1] == b""
    assert out["token_end_offsets"].max() <= len(LONG_TEXT)


# ----------------------------------------------------------------------------- other bad input
def test_invalid_utf8_and_control_characters_get_a_result():
    texts = tf.constant([b"\xff\xfe broken \x00 bytes", b"tab\tnew\nline \xe2\x80"])
    out = _call("classifier", "serving_default", text_a=texts, text_b=texts)
    assert out["logits"].shape == (2, 2) and np.isfinite(out["logits"]).all()


def test_mismatched_text_batches_are_rejected():
    with pytest.raises(tf.errors.InvalidArgumentError, match="same batch size"):
        _call("classifier", "serving_default", text_a=tf.constant(["a", "b"]),
              text_b=tf.constant(["c"]))


@pytest.mark.parametrize("overrides, message", [
    ({"input_ids": np.full((2, 64), 30522, np.int32)}, "input_ids must be < vocab_size"),
    ({"input_ids": np.full((2, 64), -1, np.int32)}, "input_ids must be >= 0"),
    ({"segment_ids": np.full((2, 64), 2, np.int32)}, "segment_ids must be < type_vocab_size"),
    ({"input_mask": np.full((2, 64), 2, np.int32)}, "input_mask must hold only 0 and 1"),
    ({"input_mask": np.ones((2, 63), np.int32)}, "input_mask must have the shape of input_ids"),
])
def test_invalid_features_are_rejected_by_name(overrides, message):
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        _call("classifier", "serve_features", **_features(**overrides))


def test_features_longer_than_the_position_table_are_rejected():
    long = {k: tf.zeros([1, 513], tf.int32) for k in ("input_ids", "input_mask", "segment_ids")}
    with pytest.raises(tf.errors.InvalidArgumentError, match="max_position_embeddings"):
        _call("squad", "serve_features", **long)
    empty = {k: tf.zeros([1, 0], tf.int32) for k in ("input_ids", "input_mask", "segment_ids")}
    with pytest.raises(tf.errors.InvalidArgumentError, match="sequence length must be >= 1"):
        _call("squad", "serve_features", **empty)


@pytest.mark.parametrize("record, message", [
    (b"not a tf.Example", "(?i)could not parse example"),
    (tf.train.Example().SerializeToString(), "input_ids"),
])
def test_bad_examples_are_rejected(record, message):
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        _call("classifier", "serve_examples", examples=tf.constant([record]))


def test_model_keeps_serving_after_bad_requests():
    with pytest.raises(tf.errors.InvalidArgumentError):
        _call("classifier", "serve_features",
              **_features(input_ids=np.full((2, 64), 10 ** 6, np.int32)))
    out = _call("classifier", "serving_default", text_a=tf.constant(["Still up?"]),
                text_b=tf.constant(["Yes."]))
    assert out["label"].shape == (1,)
