"""make_pretraining_dataset: parsing, batching, sharding, and in-graph dynamic masking."""

import math

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data.pretraining import (PretrainingDataOptions, create_pretraining_data,
                                      feature_spec, make_pretraining_dataset)
from tests.helpers import shared_path

Z = 4.5
CLS, SEP, MASK = 101, 102, 103


def _vocab():
    return str(shared_path("data/reference/vocab.txt"))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Static and dynamic-masking record files from the same real text, 2 outputs each."""
    tmp = tmp_path_factory.mktemp("records")
    text = shared_path("data/corpus/bert_format/inaugural.sentences.txt").read_text("utf-8")
    corpus = tmp / "corpus.txt"
    corpus.write_text("\n\n".join(text.split("\n\n")[:25]) + "\n", encoding="utf-8")
    made = {}
    for dynamic in (False, True):
        names = [str(tmp / f"{'dyn' if dynamic else 'static'}-{i}.tfrecord") for i in range(2)]
        options = PretrainingDataOptions(vocab_file=_vocab(), dupe_factor=1,
                                         dynamic_masking=dynamic)
        summary = create_pretraining_data(str(corpus), ",".join(names), options, num_workers=1)
        made[dynamic] = (names, summary["instances"])
    return made


def _all(dataset):
    batches = list(dataset.as_numpy_iterator())
    return {k: np.concatenate([b[k] for b in batches]) for k in batches[0]}


def test_features_have_the_documented_names_types_and_shapes(files):
    names, _ = files[False]
    batch = next(iter(make_pretraining_dataset(names, 8, 128, 20, seed=0)))
    expected = {"input_ids": (tf.int32, 128), "input_mask": (tf.int32, 128),
                "segment_ids": (tf.int32, 128), "masked_lm_positions": (tf.int32, 20),
                "masked_lm_ids": (tf.int32, 20), "masked_lm_weights": (tf.float32, 20),
                "next_sentence_labels": (tf.int32, 1)}
    assert {k: (v.dtype, v.shape[1]) for k, v in batch.items()} == expected
    assert all(v.shape[0] == 8 for v in batch.values())


def test_evaluation_reads_every_record_once_in_file_order(files):
    names, count = files[False]
    data = _all(make_pretraining_dataset(names, 64, 128, 20, is_training=False))
    assert len(data["input_ids"]) == count  # last partial batch kept
    first = _all(make_pretraining_dataset(names[:1], 64, 128, 20, is_training=False))
    np.testing.assert_array_equal(data["input_ids"][:len(first["input_ids"])],
                                  first["input_ids"])
    dropped = _all(make_pretraining_dataset(names, 64, 128, 20, is_training=False,
                                            drop_remainder=True))
    assert len(dropped["input_ids"]) == count // 64 * 64


def test_training_repeats_and_shuffles_reproducibly_with_a_seed(files):
    names, count = files[False]
    take = count // 16 * 2 + 1  # more batches than one pass holds

    def run(seed):
        ds = make_pretraining_dataset(names, 16, 128, 20, seed=seed).take(take)
        return _all(ds)["input_ids"]

    a, b, c = run(1), run(1), run(2)
    assert len(a) == take * 16 > count
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_input_pipelines_read_disjoint_files(files):
    names, count = files[False]
    seen = []
    for pipeline in range(2):
        context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=pipeline,
                                             num_replicas_in_sync=2)
        data = _all(make_pretraining_dataset(names, 8, 128, 20, is_training=False,
                                             input_context=context))
        assert data["input_ids"].shape[0] > 0
        seen.append({r.tobytes() for r in data["input_ids"]})
    assert not seen[0] & seen[1]
    assert len(seen[0]) + len(seen[1]) == count


def test_summary_and_work_files_beside_the_records_are_skipped(files, tmp_path):
    names, count = files[False]
    folder = tmp_path / "records"
    folder.mkdir()
    for i, name in enumerate(names):
        (folder / f"r-{i}.tfrecord").write_bytes(open(name, "rb").read())
    (folder / "r-0.tfrecord.summary.json").write_text("{}")
    (folder / ".r-9.tfrecord.partial").write_bytes(b"half a record")
    (folder / ".r-0.tfrecord.work").mkdir()
    data = _all(make_pretraining_dataset(f"{folder}/*", 50, 128, 20, is_training=False))
    assert len(data["input_ids"]) == count


def test_a_pattern_matching_no_records_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="matches no record files"):
        make_pretraining_dataset(str(tmp_path / "none-*"), 8, 128, 20)


def test_google_research_style_records_are_read(tmp_path):
    path = str(tmp_path / "g.tfrecord")

    def ints(values):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=values))

    with tf.io.TFRecordWriter(path) as writer:
        features = {"input_ids": ints([CLS, 2023, SEP, 2003, SEP] + [0] * 3),
                    "input_mask": ints([1] * 5 + [0] * 3),
                    "segment_ids": ints([0] * 3 + [1] * 2 + [0] * 3),
                    "masked_lm_positions": ints([1, 0]), "masked_lm_ids": ints([2023, 0]),
                    "masked_lm_weights": tf.train.Feature(
                        float_list=tf.train.FloatList(value=[1.0, 0.0])),
                    "next_sentence_labels": ints([1])}
        writer.write(tf.train.Example(
            features=tf.train.Features(feature=features)).SerializeToString())
    batch = next(iter(make_pretraining_dataset(path, 1, 8, 2, is_training=False)))
    assert batch["input_ids"].numpy().tolist() == [[CLS, 2023, SEP, 2003, SEP, 0, 0, 0]]
    assert batch["masked_lm_weights"].numpy().tolist() == [[1.0, 0.0]]


def _dynamic(files, whole_word=False, seed=3, epochs=1):
    names, count = files[True]
    ds = make_pretraining_dataset(names, 32, 128, 20, is_training=False, repeat=epochs > 1,
                                  dynamic_masking=True, vocab_file=_vocab(), seed=seed,
                                  do_whole_word_mask=whole_word)
    return _all(ds.take(math.ceil(count / 32) * epochs))


@pytest.mark.parametrize("whole_word", [False, True])
def test_dynamic_masks_follow_the_rule(files, whole_word):
    names, _ = files[True]
    serialized = next(iter(tf.data.TFRecordDataset(names).batch(10**6)))
    unmasked = tf.io.parse_example(serialized, feature_spec(128, 20, dynamic_masking=True))
    unmasked = unmasked["input_ids"].numpy()
    data = _dynamic(files, whole_word)
    w, p = data["masked_lm_weights"], data["masked_lm_positions"]
    real = w > 0
    length = data["input_mask"].sum(axis=1)
    budget = np.minimum(20, np.maximum(1, np.rint(length * 0.15)))
    if whole_word:
        assert np.all(real.sum(1) <= budget) and real.sum() / budget.sum() > 0.97
    else:
        np.testing.assert_array_equal(real.sum(axis=1), budget)
    original_at = np.take_along_axis(unmasked, p, 1)
    np.testing.assert_array_equal(data["masked_lm_ids"][real], original_at[real])
    assert not np.any(np.isin(original_at[real], [CLS, SEP]))
    assert np.all(p[real] < np.repeat(length, 20).reshape(-1, 20)[real])
    assert np.all(np.diff(np.where(real, p, 999), axis=1)[real[:, 1:]] > 0)
    assert np.all(p[~real] == 0) and np.all(data["masked_lm_ids"][~real] == 0)
    changed = data["input_ids"] != unmasked
    rows = np.broadcast_to(np.arange(len(p))[:, None], p.shape)
    chosen = np.zeros_like(changed)
    chosen[rows[real], p[real]] = True
    assert not np.any(changed & ~chosen)  # only chosen positions change
    new = np.take_along_axis(data["input_ids"], p, 1)[real]
    n = real.sum()
    as_mask, kept = (new == MASK).mean(), (new == original_at[real]).mean()
    for observed, prob in ((as_mask, 0.8), (kept, 0.1), (1 - as_mask - kept, 0.1)):
        assert abs(observed - prob) < Z * math.sqrt(prob * (1 - prob) / n), (observed, prob)
    assert data["input_ids"].max() < 30522
    if whole_word:
        from bert_tf.tokenization import load_vocab
        vocab = load_vocab(_vocab())
        cont = np.zeros(len(vocab), bool)
        cont[[i for t, i in vocab.items() if t.startswith("##")]] = True
        word_token = (data["input_mask"] == 1) & ~np.isin(unmasked, [CLS, SEP])
        piece = cont[unmasked] & np.roll(word_token, 1, axis=1) & word_token
        # A "##" piece is chosen exactly when the token before it is (same word, same segment).
        before = np.roll(chosen, 1, axis=1)
        assert np.all(chosen[piece] == before[piece])


def test_dynamic_masks_differ_between_epochs_and_repeat_with_the_seed(files):
    names, count = files[True]
    two = _dynamic(files, epochs=2)
    first, second = two["masked_lm_positions"][:count], two["masked_lm_positions"][count:2 * count]
    assert (first != second).any(axis=1).mean() > 0.9
    np.testing.assert_array_equal(two["input_mask"][:count], two["input_mask"][count:2 * count])
    again = _dynamic(files, epochs=2)
    np.testing.assert_array_equal(two["masked_lm_positions"], again["masked_lm_positions"])


def test_dynamic_masking_refuses_statically_masked_records(files):
    names, _ = files[False]
    ds = make_pretraining_dataset(names, 8, 128, 20, dynamic_masking=True, vocab_file=_vocab())
    with pytest.raises(tf.errors.InvalidArgumentError, match="already hold masked_lm_ids"):
        next(iter(ds))


def test_dynamic_masking_needs_the_vocabulary(files):
    with pytest.raises(ValueError, match="needs vocab_file"):
        make_pretraining_dataset(files[True][0], 8, 128, 20, dynamic_masking=True)
