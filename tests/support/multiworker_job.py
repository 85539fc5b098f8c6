"""One worker of a two-process MultiWorkerMirroredStrategy run (used by test_run_pretraining).

  python multiworker_job.py TF_CONFIG_JSON OUT.npz
Trains a small pre-training model for a few steps on fixed data and saves its final weights.
"""

import os
import sys

os.environ["TF_CONFIG"] = sys.argv[1]
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from bert_tf import BertConfig, BertEncoder, BertPretrainer  # noqa: E402
from bert_tf.objectives.pretraining import PretrainingObjective  # noqa: E402
from bert_tf.training.distribution import get_strategy  # noqa: E402
from bert_tf.training.optimization import create_optimizer  # noqa: E402
from bert_tf.training.trainer import Trainer  # noqa: E402


def data(n=64):
    rng = np.random.default_rng(0)
    ids = rng.integers(5, 100, (n, 16)).astype(np.int32)
    return {"input_ids": ids, "input_mask": np.ones_like(ids), "segment_ids": np.zeros_like(ids),
            "masked_lm_positions": np.tile(np.arange(1, 5, dtype=np.int32), (n, 1)),
            "masked_lm_ids": ids[:, 1:5], "masked_lm_weights": np.ones((n, 4), np.float32),
            "next_sentence_labels": rng.integers(0, 2, (n, 1)).astype(np.int32)}


def main():
    keras.utils.set_random_seed(7)
    strategy = get_strategy("multi_worker")
    with strategy.scope():
        config = BertConfig.from_preset("L-1_H-32_A-2", vocab_size=100,
                                        max_position_embeddings=16)
        model = BertPretrainer(BertEncoder(config))
        optimizer = create_optimizer(1e-3, 5, 1)
    trainer = Trainer(model, optimizer, PretrainingObjective(), strategy, steps_per_loop=1)
    features = data()

    def dataset_fn(ctx):
        ds = tf.data.Dataset.from_tensor_slices(features).shard(ctx.num_input_pipelines,
                                                                ctx.input_pipeline_id)
        return ds.repeat().batch(ctx.get_per_replica_batch_size(16))

    result = trainer.train(dataset_fn, 4, 16)
    np.savez(sys.argv[2], loss=result["loss"], replicas=strategy.num_replicas_in_sync,
             **{str(i): w.numpy() for i, w in enumerate(model.trainable_weights)})


if __name__ == "__main__":
    main()
