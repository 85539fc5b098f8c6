"""frozen_qk_pretrain.py RUN_PRETRAINING_FLAGS...: run_pretraining.py with every attention
query and key kernel (and bias) frozen at its random start.

A probe, not a feature: at the start, attention is close to uniform, so each masked position
reads the mean of its sentence (a CBOW-like objective that can only be met through the values,
feed-forward layers and embeddings). Frozen, the query/key weights cannot learn the [SEP] sink
that costs the quickstart's fine-tuning 20-28 points; the question is whether what the rest
learns then pays downstream. The checkpoint holds the frozen kernels as they started."""
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)

import bert_tf.jobs.pretraining as job  # noqa: E402

_build = job.build_model


def build_with_frozen_qk(opts):
    model = _build(opts)
    for block in model.encoder.blocks:
        block.attention.query.trainable = False
        block.attention.key.trainable = False
    print(f"frozen_qk_pretrain: query/key of {len(model.encoder.blocks)} blocks frozen",
          flush=True)
    return model


job.build_model = build_with_frozen_qk

if __name__ == "__main__":
    import run_pretraining
    from absl import flags
    from bert_tf import cli
    flags.mark_flag_as_required("output_dir")
    cli.run(run_pretraining.main)
