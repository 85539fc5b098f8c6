"""The numpy tf.train.Example encoder and TFRecord framing produce what TensorFlow reads."""

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data.pretraining import example_codec, tfrecord_io


def _write(path, features):
    payload, valid, lengths = example_codec.encode_examples(features)
    assert lengths.tolist() == valid.sum(axis=1).tolist()
    with open(path, "wb") as f:
        f.write(tfrecord_io.frame_records(payload, valid, lengths))


def _read_examples(path):
    # TFRecordDataset verifies both CRCs of every record.
    return [tf.train.Example.FromString(r.numpy()) for r in tf.data.TFRecordDataset(str(path))]


def test_crc32c_matches_the_standard_check_value():
    data = np.frombuffer(b"123456789", np.uint8)
    rows = np.zeros((1, 12), np.uint8)
    rows[0, 3:] = data  # right-aligned after zero padding
    assert tfrecord_io.crc32c_rows(rows, np.array([9]))[0] == 0xE3069283


def test_records_of_every_varint_width_read_back_exactly(tmp_path):
    boundaries = [0, 1, 127, 128, 16383, 16384, (1 << 21) - 1, 1 << 21, (1 << 28) + 5,
                  (1 << 35) + 3, (1 << 62)]
    values = np.array([boundaries, boundaries[::-1]], np.int64)
    weights = np.array([[0.0, 1.0, -2.5, 1e-20], [3.25, np.pi, 0.0, 1e20]], np.float32)
    _write(tmp_path / "x.tfrecord", [("a", "int64", values), ("w", "float", weights),
                                      ("label", "int64", np.array([[0], [1]]))])
    examples = _read_examples(tmp_path / "x.tfrecord")
    assert len(examples) == 2
    for row, example in enumerate(examples):
        feature = example.features.feature
        assert list(feature["a"].int64_list.value) == values[row].tolist()
        np.testing.assert_array_equal(np.array(feature["w"].float_list.value, np.float32),
                                      weights[row])
        assert list(feature["label"].int64_list.value) == [row]


def test_pretraining_shaped_records_parse_with_tf_parse_example(tmp_path):
    rng = np.random.default_rng(0)
    n, length, predictions = 300, 128, 20
    features = {
        "input_ids": rng.integers(0, 30522, (n, length)),
        "input_mask": rng.integers(0, 2, (n, length)),
        "segment_ids": rng.integers(0, 2, (n, length)),
        "masked_lm_positions": rng.integers(0, length, (n, predictions)),
        "masked_lm_ids": rng.integers(0, 30522, (n, predictions)),
        "masked_lm_weights": rng.integers(0, 2, (n, predictions)).astype(np.float32),
        "next_sentence_labels": rng.integers(0, 2, (n, 1)),
    }
    _write(tmp_path / "p.tfrecord",
           [(k, "float" if k == "masked_lm_weights" else "int64", v) for k, v in features.items()])
    spec = {k: tf.io.FixedLenFeature([v.shape[1]],
                                     tf.float32 if k == "masked_lm_weights" else tf.int64)
            for k, v in features.items()}
    serialized = next(iter(tf.data.TFRecordDataset(str(tmp_path / "p.tfrecord")).batch(n)))
    parsed = tf.io.parse_example(serialized, spec)
    for name, value in features.items():
        np.testing.assert_array_equal(parsed[name].numpy(), value, err_msg=name)


def test_records_from_the_encoder_equal_protobufs_serialised_by_tensorflow():
    ids = np.array([[5, 300, 20000]])
    weights = np.array([[1.0, 0.5]], np.float32)
    payload, valid, _ = example_codec.encode_examples([("ids", "int64", ids),
                                                       ("w", "float", weights)])
    ours = tf.train.Example.FromString(payload[0][valid[0]].tobytes())
    theirs = tf.train.Example(features=tf.train.Features(feature={
        "ids": tf.train.Feature(int64_list=tf.train.Int64List(value=[5, 300, 20000])),
        "w": tf.train.Feature(float_list=tf.train.FloatList(value=[1.0, 0.5]))}))
    assert ours == theirs


def test_negative_values_are_refused():
    with pytest.raises(ValueError, match="negative"):
        example_codec.encode_examples([("ids", "int64", np.array([[1, -1]]))])
