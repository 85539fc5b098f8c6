"""One input shard -> TFRecord part files: read, tokenize, lay out instances, mask, serialise.

Everything a shard produces depends only on its text, the options and (random_seed, shard index),
so shards can run in any process, in any order, and give the same bytes.
"""

import dataclasses
import itertools
import os
import random

import numpy as np

from bert_tf.data.pretraining import example_codec, instances, masking, schema, tfrecord_io
from bert_tf.data.pretraining.inputs import open_binary, read_shard
from bert_tf.data.pretraining.stats import MAX_INVALID_EXAMPLES, Stats

BATCH = 4096  # instances assembled, masked and serialised together
NUM_EXAMPLES = 3  # instances of the first shard shown in the log, as the original does


def _create(path):
    return open(path, "wb")


@dataclasses.dataclass(frozen=True)
class FileAccess:
    """How a ShardProcessor reaches files: open(path) -> seekable binary reader, create(path)
    -> binary writer, rename(source, destination)."""

    open: object = open_binary
    create: object = _create
    rename: object = os.replace


def masking_vocab(tokenizer):
    """MaskingVocab from a bert_tf.tokenization.FullTokenizer."""
    tokens = tokenizer.inv_vocab
    size = len(tokens)
    is_continuation = np.array([tokens[i].startswith("##") for i in range(size)], bool)
    return masking.MaskingVocab(tokenizer.vocab["[MASK]"], size, is_continuation)


def shard_seeds(random_seed, shard_index):
    """(seed for random.Random, numpy SeedSequence) of a shard."""
    sequence = np.random.SeedSequence([random_seed, shard_index])
    python_seq, numpy_seq = sequence.spawn(2)
    return int.from_bytes(python_seq.generate_state(4).tobytes(), "little"), numpy_seq


class ShardProcessor:
    """Turns input shards into part files for `num_outputs` output files (files: FileAccess,
    plain I/O by default; the Beam job passes Beam's file systems)."""

    def __init__(self, options, tokenizer, num_outputs, files=FileAccess()):
        self.options = options
        self.files = files
        self.tokenizer = tokenizer
        self.num_outputs = num_outputs
        self.vocab = masking_vocab(tokenizer)
        self.cls_id = tokenizer.vocab["[CLS]"]
        self.sep_id = tokenizer.vocab["[SEP]"]

    def _tokenize(self, text, stats):
        """Flat ids, sentence offsets (list) and document sentence ranges (lists)."""
        encoded = self.tokenizer.encode_batch(text.lines)
        lengths = np.fromiter(map(len, encoded), np.int64, count=len(encoded))
        flat = np.fromiter(itertools.chain.from_iterable(encoded), np.int32,
                           count=int(lengths.sum()))
        del encoded
        kept = lengths > 0
        stats.lines += len(lengths)
        stats.lines_without_tokens += int((~kept).sum())
        # Sentences before each line; a document is the sentences of its lines.
        before = np.concatenate([[0], np.cumsum(kept)])
        starts = before[np.asarray(text.doc_starts + [len(lengths)], np.int64)]
        first, end = starts[:-1], starts[1:]
        non_empty = end > first
        stats.empty_documents += int((~non_empty).sum())
        stats.documents += int(non_empty.sum())
        offsets = np.concatenate([[0], np.cumsum(lengths[kept])]).tolist()
        return flat, offsets, first[non_empty].tolist(), end[non_empty].tolist()

    def _features(self, flat, a0, a1, b0, b1, labels, rng, stats):
        """The features of a batch of instances (masked unless dynamic_masking), for
        example_codec, and their lengths."""
        opts = self.options
        ids, len_a, len_b = instances.assemble_tokens(
            flat, a0, a1, b0, b1, opts.max_seq_length, self.cls_id, self.sep_id)
        num_tokens = len_a + len_b + 3
        mask = (np.arange(opts.max_seq_length)[None, :] < num_tokens[:, None]).astype(np.int32)
        segments = mask * (np.arange(opts.max_seq_length)[None, :] >= (len_a + 2)[:, None])
        if opts.dynamic_masking:
            values = [ids, mask, segments]
        else:
            batch = masking.mask_batch(ids, len_a, len_b, opts.masked_lm_prob,
                                       opts.max_predictions_per_seq, self.vocab, rng,
                                       whole_word=opts.do_whole_word_mask)
            stats.masked += int(batch.masked_lm_weights.sum())
            stats.masked_as_mask += batch.num_masked
            stats.masked_as_random += batch.num_random
            stats.masked_as_kept += batch.num_kept
            values = [batch.input_ids, mask, segments, batch.masked_lm_positions,
                      batch.masked_lm_ids, batch.masked_lm_weights]
        values.append(labels[:, None])
        names = schema.feature_names(opts.dynamic_masking)
        return [(name, "float" if name == "masked_lm_weights" else "int64", v)
                for name, v in zip(names, values)], num_tokens

    def _describe(self, features, count):
        """Readable lines for the first `count` instances of a batch of features."""
        token = self.tokenizer.inv_vocab.__getitem__
        values = {name: v for name, _, v in features}
        lines = []
        for row in range(min(count, len(values["input_ids"]))):
            length = int(values["input_mask"][row].sum())
            lines.append("tokens: " + " ".join(map(token, values["input_ids"][row][:length])))
            for name, v in values.items():
                if name != "input_ids":
                    lines.append(f"{name}: " + " ".join(str(x) for x in v[row].tolist()))
        return lines

    def process(self, shard, part_paths):
        """Writes shard's instances round-robin into part_paths (one per output file, written to
        a temporary name, then renamed); returns (Stats, records per part, example lines)."""
        opts = self.options
        stats = Stats()
        text = read_shard(shard, MAX_INVALID_EXAMPLES, self.files.open)
        stats.input_bytes += text.num_bytes
        stats.invalid_bytes += text.invalid_bytes
        stats.invalid_places += text.invalid_examples
        flat, offsets, doc_first, doc_end = self._tokenize(text, stats)
        del text
        python_seed, numpy_seed = shard_seeds(opts.random_seed, shard.index)
        rng = np.random.default_rng(numpy_seed)
        if len(doc_first) == 1:
            stats.single_document_shards += 1
        max_num_tokens = opts.max_seq_length - 3
        a0, a1, b0, b1, labels, forced = instances.layout_instances(
            offsets, doc_first, doc_end, max_num_tokens, opts.short_seq_prob, opts.dupe_factor,
            random.Random(python_seed))
        a0, a1, b0, b1 = instances.truncate_pairs(a0, a1, b0, b1, max_num_tokens, rng)
        order = rng.permutation(len(a0))
        stats.instances += len(order)
        stats.random_next += int(labels.sum())
        stats.random_next_forced += int(forced.sum())
        length_counts = np.zeros(opts.max_seq_length + 1, np.int64)

        k = self.num_outputs
        counts, examples = [0] * k, []
        temporary = [p + ".tmp" for p in part_paths]
        files = [self.files.create(p) for p in temporary]
        try:
            for start in range(0, len(order), BATCH):
                rows = order[start:start + BATCH]
                features, num_tokens = self._features(flat, a0[rows], a1[rows], b0[rows],
                                                      b1[rows], labels[rows], rng, stats)
                length_counts += np.bincount(num_tokens, minlength=len(length_counts))
                if shard.index == 0 and start == 0:
                    examples = self._describe(features, NUM_EXAMPLES)
                payload, valid, lengths = example_codec.encode_examples(features)
                for j in range(k):
                    first = (j - start) % k  # record t of the shard goes to part t % k
                    framed = tfrecord_io.frame_records(payload[first::k], valid[first::k],
                                                       lengths[first::k])
                    files[j].write(framed)
                    counts[j] += len(range(first, len(rows), k))
        finally:
            for f in files:
                f.close()
        for tmp, path in zip(temporary, part_paths):
            self.files.rename(tmp, path)
        stats.tokens += int(length_counts @ np.arange(len(length_counts)))
        stats.length_counts = length_counts.tolist()
        return stats, counts, examples
