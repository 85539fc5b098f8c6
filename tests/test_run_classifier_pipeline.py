"""run_classifier's tf.data input: in-graph tokenization, length sorting, trimming, the
TFRecord feature cache."""

import os

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data.classification import InputExample, get_processor
from bert_tf.data.classification import pipeline
from helpers import minilm_dir, shared_path

SEQ = 128


@pytest.fixture(scope="module")
def preprocessor():
    return pipeline.make_preprocessor(str(minilm_dir() / "vocab.txt"), True, SEQ)


@pytest.fixture(scope="module")
def sst2_dev():
    examples = get_processor("sst-2").get_dev_examples(shared_path("data/glue/SST-2"))
    return pipeline.ExampleColumns(examples, ["0", "1"])


@pytest.fixture(scope="module")
def reference(sst2_dev, preprocessor):
    """The preprocessor's full-length features of every SST-2 dev sentence, in file order."""
    return {k: v.numpy() for k, v in preprocessor(tf.constant(list(sst2_dev.text_a))).items()}


def _batches(dataset):
    return [{k: v.numpy() for k, v in batch.items()} for batch in dataset]


def test_eval_batches_are_sorted_trimmed_and_hold_every_example_once(sst2_dev, preprocessor,
                                                                     reference):
    batches = _batches(pipeline.classifier_dataset(
        sst2_dev, 32, is_training=False, max_seq_length=SEQ, preprocessor=preprocessor))
    index = np.concatenate([b["example_index"] for b in batches])
    assert sorted(index) == list(range(872))
    lengths = reference["input_mask"].sum(axis=1)
    previous_longest = 0
    for batch in batches:
        width = batch["input_ids"].shape[1]
        rows = batch["example_index"]
        longest = lengths[rows].max()
        assert width % 16 == 0 and longest <= width < longest + 16
        assert lengths[rows].min() >= previous_longest or previous_longest == 0
        previous_longest = longest
        for key in pipeline.MODEL_KEYS:
            np.testing.assert_array_equal(batch[key], reference[key][rows, :width])
            assert not reference[key][rows, width:].any()     # only padding was cut
        np.testing.assert_array_equal(batch["label_ids"], sst2_dev.label_ids[rows])
    widths = [b["input_ids"].shape[1] for b in batches]
    # Sorting by length keeps most SST-2 sentences well below 128 tokens.
    assert np.mean(widths) < 64, widths


def test_pad_to_max_length_keeps_file_order_and_fixed_shapes(sst2_dev, preprocessor,
                                                             reference):
    batches = _batches(pipeline.classifier_dataset(
        sst2_dev, 100, is_training=False, max_seq_length=SEQ, preprocessor=preprocessor,
        pad_to_max_length=True))
    assert [len(b["example_index"]) for b in batches] == [100] * 8 + [72]
    assert {b["input_ids"].shape[1] for b in batches} == {SEQ}
    np.testing.assert_array_equal(np.concatenate([b["input_ids"] for b in batches]),
                                  reference["input_ids"])


def test_training_batches_are_full_shuffled_by_seed_and_repeat(sst2_dev, preprocessor):
    def first(seed, n=14):
        dataset = pipeline.classifier_dataset(sst2_dev, 64, is_training=True,
                                              max_seq_length=SEQ, preprocessor=preprocessor,
                                              seed=seed)
        return [b["example_index"] for b in _batches(dataset.take(n))]

    a, b, c = first(7), first(7), first(8)
    assert all(len(x) == 64 for x in a)                     # 14 x 64 > 872: it repeated
    np.testing.assert_array_equal(np.concatenate(a), np.concatenate(b))
    assert not np.array_equal(np.concatenate(a), np.concatenate(c))
    epoch = np.concatenate(a)[:13 * 64]                     # 13 full batches = 832 examples
    assert len(np.unique(epoch)) == len(epoch)
    assert not np.array_equal(epoch, np.sort(epoch))


def test_sentence_pairs_get_segment_ids(preprocessor):
    examples = [InputExample("dev-0", "the cat sat", "on the mat", "1"),
                InputExample("dev-1", "a dog", "barked loudly at night", "0")]
    columns = pipeline.ExampleColumns(examples, ["0", "1"])
    (batch,) = _batches(pipeline.classifier_dataset(
        columns, 8, is_training=False, max_seq_length=SEQ, preprocessor=preprocessor))
    order = batch["example_index"].tolist()
    assert batch["input_ids"].shape == (2, 16)
    first = order.index(0)
    # [CLS] the cat sat [SEP] on the mat [SEP]
    assert batch["segment_ids"][first].tolist()[:9] == [0, 0, 0, 0, 0, 1, 1, 1, 1]
    assert batch["input_mask"][first].sum() == 9
    assert batch["label_ids"][first] == 1


def test_feature_cache_round_trips_and_is_rebuilt_when_the_data_change(tmp_path, preprocessor):
    vocab = str(minilm_dir() / "vocab.txt")
    examples = get_processor("sst-2").get_dev_examples(shared_path("data/glue/SST-2"))[:50]
    columns = pipeline.ExampleColumns(examples, ["0", "1"])
    path = pipeline.feature_cache(columns, preprocessor, tmp_path, "sst2_dev", vocab, True, SEQ)
    written_at = os.stat(path).st_mtime_ns
    from_cache = _batches(pipeline.classifier_dataset(path, 16, is_training=False,
                                                      max_seq_length=SEQ))
    from_text = _batches(pipeline.classifier_dataset(columns, 16, is_training=False,
                                                     max_seq_length=SEQ,
                                                     preprocessor=preprocessor))
    for cached, tokenized in zip(from_cache, from_text, strict=True):
        for key in cached:
            np.testing.assert_array_equal(cached[key], tokenized[key], err_msg=key)
    again = pipeline.feature_cache(columns, preprocessor, tmp_path, "sst2_dev", vocab, True, SEQ)
    assert again == path and os.stat(path).st_mtime_ns == written_at      # reused
    relabelled = pipeline.ExampleColumns(
        [InputExample(e.guid, e.text_a, None, "1") for e in examples], ["0", "1"])
    pipeline.feature_cache(relabelled, preprocessor, tmp_path, "sst2_dev", vocab, True, SEQ)
    assert os.stat(path).st_mtime_ns != written_at                        # rebuilt
    (batch,) = _batches(pipeline.classifier_dataset(path, 64, is_training=False,
                                                    max_seq_length=SEQ))
    assert set(batch["label_ids"].tolist()) == {1}


def test_regression_labels_are_floats_and_test_rows_get_a_placeholder():
    examples = [InputExample("train-0", "a", "b", 3.8), InputExample("test-1", "c", "d", None)]
    columns = pipeline.ExampleColumns(examples, is_regression=True)
    assert columns.label_ids.dtype == np.float32
    assert columns.label_ids.tolist() == pytest.approx([3.8, 0.0])


def test_mixed_single_texts_and_pairs_are_rejected():
    examples = [InputExample("dev-0", "a", "b", "1"), InputExample("dev-1", "c", None, "0")]
    with pytest.raises(ValueError, match="dev-1"):
        pipeline.ExampleColumns(examples, ["0", "1"])


def test_labels_outside_the_label_list_are_rejected():
    with pytest.raises(ValueError, match="'maybe' is not in the label list"):
        pipeline.ExampleColumns([InputExample("dev-0", "a", None, "maybe")], ["0", "1"])
