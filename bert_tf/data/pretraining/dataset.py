"""tf.data reader for pre-training TFRecords (ours or google-research/bert's).

Training mirrors google-research/bert's run_pretraining input: the file list is repeated and
shuffled, files are read in parallel (interleave), records are shuffled and batched. Records are
parsed per batch (tf.io.parse_example) and int64 features cast to int32. With dynamic_masking the
files hold unmasked sequences (create_pretraining_data --dynamic_masking) and the masked-LM
predictions are chosen here, in the graph, afresh every time a record is read.
"""

import logging
import random

import tensorflow as tf

from bert_tf.data.maps import graph_map
from bert_tf.data.pretraining import dynamic_masking as dynamic
from bert_tf.data.pretraining import schema

logger = logging.getLogger(__name__)

def _is_record_file(path):
    """False for what create_pretraining_data keeps beside its records: the summary JSON and,
    while it runs, hidden partial files and work folders (TensorFlow's glob matches both)."""
    name = path.rstrip("/").rsplit("/", 1)[-1]
    return not (name.startswith(".") or name.endswith(".json") or tf.io.gfile.isdir(path))


def expand_input_patterns(input_patterns):
    """Files of comma-separated (or listed) globs, in order; summary JSON files, hidden files
    and folders matched by a glob are skipped. Raises ValueError for a pattern that matches no
    record file."""
    if isinstance(input_patterns, str):
        input_patterns = input_patterns.split(",")
    files = []
    for pattern in (str(p).strip() for p in input_patterns):
        if not pattern:
            continue
        matches = sorted(tf.io.gfile.glob(pattern))
        kept = [m for m in matches if _is_record_file(m)]
        if len(kept) < len(matches):
            logger.info("skipping %d summary/hidden file(s) or folder(s) matched by %s",
                        len(matches) - len(kept), pattern)
        if not kept:
            raise ValueError(f"input pattern {pattern!r} matches no record files")
        files.extend(kept)
    if not files:
        raise ValueError("no input files given")
    return files


def check_first_record(input_patterns, max_seq_length, max_predictions_per_seq,
                       dynamic_masking=False):
    """Checks the first record of the first file of `input_patterns` against the schema, so that
    a text file, or records written with other lengths or masking, stop the run with the file
    named instead of failing inside the first training step. Raises ValueError."""
    path = expand_input_patterns(input_patterns)[0]
    try:
        record = next(iter(tf.data.TFRecordDataset(path).take(1)), None)
    except tf.errors.DataLossError:
        raise ValueError(f"{path}: not a TFRecord file (pre-training reads the output of "
                         "create_pretraining_data.py)") from None
    if record is None:
        return
    from google.protobuf.message import DecodeError
    try:
        features = tf.train.Example.FromString(record.numpy()).features.feature
    except DecodeError:
        raise ValueError(f"{path}: its records are not tf.train.Example protos") from None
    for name in schema.feature_names(dynamic_masking=True):
        if name not in features:
            raise ValueError(f"{path}: the records have no {name} feature: not pre-training "
                             "data")
    if dynamic_masking and "masked_lm_ids" in features:
        raise ValueError(f"{path}: the records are masked already (written without "
                         "--dynamic_masking): read them without --dynamic_masking")
    if not dynamic_masking and "masked_lm_ids" not in features:
        raise ValueError(f"{path}: the records hold no masked_lm_* features (written with "
                         "--dynamic_masking): read them with --dynamic_masking")
    lengths = {name: max_seq_length for name in schema.SEQUENCE_FEATURES}
    if not dynamic_masking:
        lengths.update({name: max_predictions_per_seq for name in schema.MASKED_LM_FEATURES})
    for name, expected in lengths.items():
        kind = features[name].WhichOneof("kind")
        found = len(getattr(features[name], kind).value) if kind else 0
        if found != expected:
            flag = ("max_seq_length" if name in schema.SEQUENCE_FEATURES
                    else "max_predictions_per_seq")
            raise ValueError(f"{path}: {name} has {found} values, not --{flag}={expected}: "
                             f"the records were written with --{flag}={found}")


def make_pretraining_dataset(input_patterns, batch_size, max_seq_length,
                             max_predictions_per_seq, *, is_training=True, drop_remainder=None,
                             repeat=None, dynamic_masking=False, vocab_file=None,
                             masked_lm_prob=0.15, do_whole_word_mask=False, seed=None,
                             input_context=None, cycle_length=4, shuffle_buffer_size=10000):
    """Batches of pre-training features.

    Args:
      input_patterns: comma-separated string or list of TFRecord paths/globs.
      batch_size: global batch size; with `input_context` each pipeline yields
        input_context.get_per_replica_batch_size(batch_size).
      max_seq_length, max_predictions_per_seq: the lengths the files were written with.
      is_training: shuffle files and records, and (by default) repeat and drop the remainder.
      drop_remainder: drop a last partial batch (default: is_training).
      repeat: cycle through the data forever (default: is_training).
      dynamic_masking: the files hold unmasked sequences; choose predictions per read.
      vocab_file, masked_lm_prob, do_whole_word_mask: the masking rule for dynamic_masking.
      seed: makes shuffling and dynamic masks reproducible (default: random).
      input_context: tf.distribute.InputContext; files (or, with fewer files than pipelines,
        records) are split between input pipelines.
      cycle_length: files read at once; shuffle_buffer_size: records shuffled at once (training).

    Returns a tf.data.Dataset of dicts: input_ids, input_mask, segment_ids (int32 [B, L]),
    masked_lm_positions, masked_lm_ids (int32 [B, P]), masked_lm_weights (float32 [B, P]),
    next_sentence_labels (int32 [B, 1]).
    """
    files = expand_input_patterns(input_patterns)
    drop_remainder = is_training if drop_remainder is None else drop_remainder
    repeat = is_training if repeat is None else repeat
    if seed is None:
        seed = random.SystemRandom().randrange(1 << 31)
    spec = None
    if dynamic_masking:
        if vocab_file is None:
            raise ValueError("dynamic_masking needs vocab_file (for [MASK]/[CLS]/[SEP] ids, "
                             "the vocabulary size and the ## pieces)")
        spec = dynamic.MaskingSpec.from_vocab_file(
            vocab_file, masked_lm_prob=masked_lm_prob,
            max_predictions_per_seq=max_predictions_per_seq, whole_word=do_whole_word_mask)
    pipelines, pipeline_id = 1, 0
    if input_context is not None:
        pipelines, pipeline_id = input_context.num_input_pipelines, input_context.input_pipeline_id
        batch_size = input_context.get_per_replica_batch_size(batch_size)

    options = tf.data.Options()
    options.deterministic = True
    d = _records(files, is_training, repeat, pipelines, pipeline_id, cycle_length,
                 shuffle_buffer_size, seed)
    d = d.batch(batch_size, drop_remainder=drop_remainder)
    feature_spec = schema.feature_spec(max_seq_length, max_predictions_per_seq, dynamic_masking)
    if dynamic_masking:
        d = d.enumerate()
    parse = _parser(feature_spec, spec, seed, pipelines, pipeline_id)
    d = graph_map(d, parse)
    return d.with_options(options).prefetch(tf.data.AUTOTUNE)


def _parse(serialized, feature_spec):
    features = tf.io.parse_example(serialized, feature_spec)
    return {name: tf.cast(value, tf.int32) if value.dtype == tf.int64 else value
            for name, value in features.items()}


def _records(files, is_training, repeat, pipelines, pipeline_id, cycle_length,
             shuffle_buffer_size, seed):
    """The serialized records of this input pipeline: its share of the files (or, with fewer
    files than pipelines, of the records), interleaved and shuffled for training."""
    d = tf.data.Dataset.from_tensor_slices(tf.constant(files))
    shard_files = pipelines > 1 and len(files) >= pipelines
    if shard_files:
        d = d.shard(pipelines, pipeline_id)
    if is_training:
        if repeat:
            d = d.repeat()
        d = d.shuffle(len(files), seed=seed)
        d = d.interleave(tf.data.TFRecordDataset, cycle_length=min(cycle_length, len(files)),
                         num_parallel_calls=tf.data.AUTOTUNE)
    else:
        d = d.flat_map(tf.data.TFRecordDataset)
        if repeat:
            d = d.repeat()
    if pipelines > 1 and not shard_files:
        d = d.shard(pipelines, pipeline_id)
    if is_training:
        d = d.shuffle(shuffle_buffer_size, seed=seed + 1)
    return d


def _parser(feature_spec, spec, seed, pipelines, pipeline_id):
    """The function from a batch of serialized records to its features; with a MaskingSpec
    (dynamic masking) from (batch index, records), masked afresh with a seed of the batch."""
    if spec is None:
        return lambda serialized: _parse(serialized, feature_spec)
    feature_spec = dict(feature_spec, masked_lm_ids=tf.io.VarLenFeature(tf.int64))  # absent

    def parse(index, serialized):
        features = _parse(serialized, feature_spec)
        already = tf.size(features.pop("masked_lm_ids").values)
        tf.debugging.assert_equal(already, 0, message=(
            "dynamic_masking=True but the records already hold masked_lm_ids: they were "
            "written with static masking; read them with dynamic_masking=False"))
        batch_seed = tf.stack([tf.cast(seed, tf.int64), index * pipelines + pipeline_id])
        ids, positions, labels, weights = dynamic.mask_batch(
            features["input_ids"], features["input_mask"], spec, batch_seed)
        features.update(input_ids=ids, masked_lm_positions=positions, masked_lm_ids=labels,
                        masked_lm_weights=weights)
        return features

    return parse
