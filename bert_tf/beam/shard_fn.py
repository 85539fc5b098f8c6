"""The DoFn of create_pretraining_data's Beam pipeline (bert_tf.beam.pretraining_data): a shard
description in, the shard's part files and marker written, (shard index, marker) out."""

import os
import tempfile

from bert_tf.beam import runtime
from bert_tf.beam.pretraining_data import read_json, write_json
from bert_tf.data.pretraining import shard_worker

beam = runtime.import_beam()


class ShardFn(beam.DoFn):
    """Runs the pool's ShardProcessor, built once per worker (setup) with Beam's file systems;
    a shard whose marker and parts an earlier run completed is not computed again."""

    def __init__(self, options, vocab, layout):
        self.options, self.vocab, self.layout = options, vocab, layout
        self.processor = None
        self.reused = beam.metrics.Metrics.counter("bert_tf", "shards_reused")
        self.computed = beam.metrics.Metrics.counter("bert_tf", "shards_computed")

    def setup(self):
        from bert_tf import tokenization
        with tempfile.TemporaryDirectory(prefix="bert_tf_vocab_") as folder:
            vocab_file = os.path.join(folder, "vocab.txt")
            with open(vocab_file, "wb") as f:
                f.write(self.vocab)
            tokenizer = tokenization.FullTokenizer(vocab_file, self.options.do_lower_case,
                                                   graph_min_batch=None)
        files = shard_worker.FileAccess(runtime.open_read, runtime.create, runtime.rename)
        self.processor = shard_worker.ShardProcessor(self.options, tokenizer,
                                                     len(self.layout.outputs), files)

    def process(self, shard):
        marker_path = self.layout.marker(shard.index)
        marker = read_json(marker_path)
        if marker and all(runtime.exists(p) for p in self.layout.parts(shard.index)):
            self.reused.inc()
            yield shard.index, marker
            return
        stats, counts, examples = self.processor.process(shard, self.layout.parts(shard.index))
        marker = {"stats": stats.to_json(), "counts": counts, "examples": examples}
        write_json(marker_path, marker)
        self.computed.inc()
        yield shard.index, marker
