"""tf.data input of run_classifier: InputExamples -> in-graph tokenizer -> batched features.

Texts enter the pipeline as strings and are tokenized and packed a batch at a time by
BertPreprocessor (no per-example Python). Each element is a dict of int32
`input_ids`/`input_mask`/`segment_ids` [B, L], `label_ids` [B] (int32, float32 for
regression) and `example_index` [B] (position in the example list, so results can be put back
in order and checked for completeness).

Padding: a batch is cut to its longest sequence rounded up to `length_multiple` (L <=
max_seq_length), which leaves every result unchanged (padding is masked) and saves the work
on padding; `pad_to_max_length` keeps google-research's fixed L = max_seq_length (TPU).
Evaluation and prediction also sort examples by length inside windows of `sort_window`
examples, so short sentences share batches; `example_index` restores the order.

Long texts (a preprocessor with doc_stride): each batch of B examples becomes N >= B windows,
so the model keys are [N, L] with int32 `window_example` [N] (each window's example in the
batch) while `label_ids` and `example_index` stay [B]; such batches are not sorted by length
and cannot come from the feature cache.

Large tasks can tokenize once into a TFRecord feature cache (google-research's feature names
input_ids, input_mask, segment_ids, label_ids, is_real_example, plus example_index), reused
while its fingerprint (texts, labels, vocabulary, casing, length) matches.
"""

import hashlib
import json
import logging
import os
import time

import numpy as np
import tensorflow as tf

from bert_tf import fileio
from bert_tf.data.maps import graph_map

logger = logging.getLogger("bert_tf")

MODEL_KEYS = ("input_ids", "input_mask", "segment_ids")
CACHE_VERSION = 1


class ExampleColumns:
    """The examples of one split as arrays: text_a, text_b (or None), label_ids, and the
    number of examples. Test examples (label None) get label 0 / 0.0, as google-research."""

    def __init__(self, examples, label_list=(), is_regression=False):
        if not examples:
            raise ValueError("no examples to feed")
        has_b = examples[0].text_b is not None
        for example in examples:
            if (example.text_b is not None) != has_b:
                raise ValueError(f"example {example.guid}: every example of a split must have "
                                 f"a second text or none does (the first one "
                                 f"{'has' if has_b else 'has not'})")
        self.num_examples = len(examples)
        self.is_regression = bool(is_regression)
        self.text_a = np.array([e.text_a for e in examples], dtype=object)
        self.text_b = np.array([e.text_b for e in examples], dtype=object) if has_b else None
        if is_regression:
            self.label_ids = np.array([0.0 if e.label is None else float(e.label)
                                       for e in examples], np.float32)
        else:
            index = {label: i for i, label in enumerate(label_list)}
            try:
                self.label_ids = np.array([0 if e.label is None else index[e.label]
                                           for e in examples], np.int32)
            except KeyError as e:
                raise ValueError(f"label {e.args[0]!r} is not in the label list "
                                 f"{list(label_list)}") from None

    def as_dict(self):
        columns = {"text_a": self.text_a, "label_ids": self.label_ids,
                   "example_index": np.arange(self.num_examples, dtype=np.int32)}
        if self.text_b is not None:
            columns["text_b"] = self.text_b
        return columns

    def fingerprint(self):
        """sha256 over texts and labels: identifies the split's content for the cache."""
        digest = hashlib.sha256()
        for i in range(self.num_examples):
            digest.update(self.text_a[i].encode("utf-8") + b"\x00")
            if self.text_b is not None:
                digest.update(self.text_b[i].encode("utf-8") + b"\x00")
        digest.update(self.label_ids.tobytes())
        return digest.hexdigest()


def make_preprocessor(vocab_file, do_lower_case, max_seq_length, doc_stride=0, max_windows=0):
    """The in-graph BertPreprocessor (text or pair -> BERT inputs of max_seq_length; with
    doc_stride, windows over long first texts)."""
    from bert_tf.tokenization import BertPreprocessor
    return BertPreprocessor(vocabulary=vocab_file, lower_case=do_lower_case,
                            seq_length=max_seq_length, doc_stride=doc_stride,
                            max_windows=max_windows, name="preprocessor")


def _tokenizer(preprocessor):
    """batch of example columns -> batch of features, through the preprocessor."""
    def tokenize(batch):
        texts = (batch["text_a"], batch["text_b"]) if "text_b" in batch else batch["text_a"]
        features = dict(preprocessor(texts))    # + window_example with doc_stride
        features["label_ids"] = batch["label_ids"]
        features["example_index"] = batch["example_index"]
        return features
    return tokenize


def _record_spec(max_seq_length, is_regression):
    fixed = tf.io.FixedLenFeature
    return {"input_ids": fixed([max_seq_length], tf.int64),
            "input_mask": fixed([max_seq_length], tf.int64),
            "segment_ids": fixed([max_seq_length], tf.int64),
            "label_ids": fixed([], tf.float32 if is_regression else tf.int64),
            "example_index": fixed([], tf.int64)}


def _record_parser(max_seq_length, is_regression):
    spec = _record_spec(max_seq_length, is_regression)

    def parse(serialized):
        parsed = tf.io.parse_example(serialized, spec)
        return {k: v if v.dtype == tf.float32 else tf.cast(v, tf.int32)
                for k, v in parsed.items()}
    return parse


def sort_by_length(features):
    """Reorders a batch of features by sequence length (stable)."""
    lengths = tf.reduce_sum(features["input_mask"], axis=1)
    order = tf.argsort(lengths, stable=True)
    return {k: tf.gather(v, order) for k, v in features.items()}


def trim_padding(features, length_multiple, max_seq_length):
    """Cuts the [B, S] features to the longest sequence of the batch, rounded up to
    `length_multiple`."""
    longest = tf.reduce_max(tf.reduce_sum(features["input_mask"], axis=1))
    length = tf.minimum((longest + length_multiple - 1) // length_multiple * length_multiple,
                        max_seq_length)
    length = tf.maximum(length, 1)
    return {k: v[:, :length] if k in MODEL_KEYS else v for k, v in features.items()}


def classifier_dataset(source, batch_size, *, is_training, max_seq_length, preprocessor=None,
                       is_regression=False, seed=None, input_context=None, length_multiple=16,
                       pad_to_max_length=False, sort_window=4096, drop_remainder=None):
    """The per-replica dataset of feature batches.

    source: ExampleColumns (tokenized here by `preprocessor`), features tokenized ahead by
      tokenize_in_memory, or the path of a feature cache written by write_feature_cache.
    Training: shard, shuffle (seeded, every epoch anew), repeat, batch (dropping the
    remainder). Otherwise: one pass in order, except that examples are sorted by length
    within windows of `sort_window` (unless pad_to_max_length or long-text windows); the last
    batch may be short.
    """
    windows = bool(getattr(preprocessor, "doc_stride", 0))
    if windows and not isinstance(source, ExampleColumns):
        raise ValueError("long-text windows (doc_stride) tokenize raw examples: the feature "
                         "cache and in-memory features hold truncated ones")
    if isinstance(source, ExampleColumns):
        if preprocessor is None:
            raise ValueError("a preprocessor is needed to tokenize raw examples")
        dataset = tf.data.Dataset.from_tensor_slices(source.as_dict())
        num_examples = source.num_examples
        to_features = _tokenizer(preprocessor)
    elif isinstance(source, dict):
        dataset = tf.data.Dataset.from_tensor_slices(source)
        num_examples = len(source["example_index"])
        to_features = dict
    else:
        meta = read_cache_metadata(source)
        dataset = tf.data.TFRecordDataset(str(source))
        num_examples = meta["num_examples"]
        to_features = _record_parser(meta["max_seq_length"], meta["is_regression"])
    if input_context is not None and input_context.num_input_pipelines > 1:
        dataset = dataset.shard(input_context.num_input_pipelines,
                                input_context.input_pipeline_id)
    if is_training:
        dataset = dataset.shuffle(num_examples, seed=seed, reshuffle_each_iteration=True)
        dataset = dataset.repeat()
        dataset = dataset.batch(batch_size, drop_remainder=True if drop_remainder is None
                                else drop_remainder)
        dataset = graph_map(dataset, to_features, deterministic=True)
    elif pad_to_max_length or windows:
        dataset = dataset.batch(batch_size, drop_remainder=bool(drop_remainder))
        dataset = graph_map(dataset, to_features, deterministic=True)
    else:
        window = max(int(sort_window), batch_size)
        dataset = dataset.batch(window)
        dataset = graph_map(dataset, lambda batch: sort_by_length(to_features(batch)),
                            deterministic=True)
        dataset = dataset.unbatch().batch(batch_size, drop_remainder=bool(drop_remainder))
    if not pad_to_max_length:
        dataset = graph_map(dataset,
                            lambda f: trim_padding(f, length_multiple, max_seq_length),
                            deterministic=True)
    return dataset.prefetch(tf.data.AUTOTUNE)


def tokenize_in_memory(columns, preprocessor, batch_size=1024):
    """Features of every example as numpy arrays [N, max_seq_length] (plus label_ids and
    example_index), tokenized once through tf.data: a source for datasets read many times
    (periodic evaluation), which then skip the tokenizer's start-up on every pass."""
    dataset = tf.data.Dataset.from_tensor_slices(columns.as_dict()).batch(batch_size)
    dataset = graph_map(dataset, _tokenizer(preprocessor), deterministic=True)
    parts = [{k: v.numpy() for k, v in batch.items()} for batch in dataset]
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


# --------------------------------------------------------------------------- feature cache
def _int64_feature(values):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=values))


def _cache_fingerprint(columns, vocab_file, do_lower_case, max_seq_length):
    with fileio.open_binary(vocab_file) as f:
        vocab_sha = hashlib.sha256(f.read()).hexdigest()
    return {"version": CACHE_VERSION, "examples_sha256": columns.fingerprint(),
            "num_examples": columns.num_examples, "vocab_sha256": vocab_sha,
            "do_lower_case": bool(do_lower_case), "max_seq_length": int(max_seq_length),
            "is_regression": columns.is_regression}


def read_cache_metadata(path):
    meta_path = f"{path}.json"
    if not fileio.exists(meta_path):
        raise FileNotFoundError(f"{path}: no feature-cache metadata {meta_path}")
    with fileio.open_binary(meta_path) as f:
        return json.loads(f.read().decode("utf-8"))


def write_feature_cache(columns, preprocessor, path, fingerprint, batch_size=1024):
    """Tokenizes `columns` in-graph and writes one tf.train.Example per example to `path`
    (atomically), then `path`.json with the fingerprint. Returns the path."""
    start = time.perf_counter()
    dataset = tf.data.Dataset.from_tensor_slices(columns.as_dict()).batch(batch_size)
    dataset = graph_map(dataset, _tokenizer(preprocessor), deterministic=True).prefetch(
        tf.data.AUTOTUNE)
    written, last_log = 0, start
    with fileio.atomic_path(path) as tmp, tf.io.TFRecordWriter(tmp) as writer:
        for batch in dataset:
            batch = {k: v.numpy() for k, v in batch.items()}
            for i in range(len(batch["example_index"])):
                label = batch["label_ids"][i]
                fields = {k: _int64_feature(batch[k][i].tolist()) for k in MODEL_KEYS}
                fields["label_ids"] = (
                    tf.train.Feature(float_list=tf.train.FloatList(value=[float(label)]))
                    if columns.is_regression else _int64_feature([int(label)]))
                fields["is_real_example"] = _int64_feature([1])
                fields["example_index"] = _int64_feature([int(batch["example_index"][i])])
                writer.write(tf.train.Example(features=tf.train.Features(
                    feature=fields)).SerializeToString())
                written += 1
            if time.perf_counter() - last_log > 30:
                last_log = time.perf_counter()
                logger.info("feature cache %s: %d/%d examples", path, written,
                            columns.num_examples)
    fileio.atomic_write_text(f"{path}.json", json.dumps(fingerprint, indent=1) + "\n")
    logger.info("wrote feature cache %s (%d examples, %.1f s)", path, written,
                time.perf_counter() - start)
    return path


def feature_cache(columns, preprocessor, cache_dir, name, vocab_file, do_lower_case,
                  max_seq_length):
    """Path of the feature cache `cache_dir`/`name`.tf_record for `columns`: reused when its
    fingerprint matches, (re)written otherwise."""
    path = os.path.join(str(cache_dir), f"{name}.tf_record")
    fingerprint = _cache_fingerprint(columns, vocab_file, do_lower_case, max_seq_length)
    if fileio.exists(path) and fileio.exists(f"{path}.json"):
        if read_cache_metadata(path) == fingerprint:
            logger.info("using feature cache %s (%d examples)", path, columns.num_examples)
            return path
        logger.info("feature cache %s is stale (data, vocabulary, casing or length changed): "
                    "rewriting it", path)
    return write_feature_cache(columns, preprocessor, path, fingerprint)
