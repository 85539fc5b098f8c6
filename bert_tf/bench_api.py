"""Plug-in for ../shared/bench (`--impl project --project_dir <this checkout>`).

Entry points: build_forward, build_train_step, build_tokenizer. The harness passes `cfg` with
keys layers, hidden, heads, intermediate, vocab, max_position, type_vocab, max_predictions,
dropout. Inputs are fixed random ids, as for the peers.
"""

import numpy as np
import tensorflow as tf

from bert_tf.config import BertConfig
from bert_tf.model import BertEncoder
from bert_tf.tokenization.bench_plugin import build_tokenizer  # noqa: F401 (harness entry point)


def _config(cfg):
    return BertConfig(vocab_size=cfg["vocab"], hidden_size=cfg["hidden"],
                      num_hidden_layers=cfg["layers"], num_attention_heads=cfg["heads"],
                      intermediate_size=cfg["intermediate"], hidden_act="gelu_tanh",
                      hidden_dropout_prob=cfg["dropout"],
                      attention_probs_dropout_prob=cfg["dropout"],
                      max_position_embeddings=cfg["max_position"],
                      type_vocab_size=cfg["type_vocab"])


def _inputs(cfg, batch, seq, seed=0):
    rng = np.random.default_rng(seed)
    segment_ids = np.zeros((batch, seq), np.int32)
    segment_ids[:, seq // 2:] = 1
    return {"input_ids": tf.constant(rng.integers(1000, cfg["vocab"], (batch, seq), np.int32)),
            "input_mask": tf.ones((batch, seq), tf.int32),
            "segment_ids": tf.constant(segment_ids)}


def build_forward(cfg, batch, seq, jit_compile):
    """Encoder inference on a fixed batch: returns sequence and pooled output."""
    encoder = BertEncoder(_config(cfg))
    inputs = _inputs(cfg, batch, seq)

    @tf.function(jit_compile=jit_compile)
    def forward(x):
        out = encoder(x, training=False)
        return {"sequence_output": out["sequence_output"], "pooled_output": out["pooled_output"]}

    return lambda: forward(inputs)


def build_train_step(cfg, batch, seq, task, jit_compile):
    """One optimizer step per call through bert_tf's own Trainer loop (the runners' code path):
    AdamW with google-research semantics; task "classify" (2 classes on the pooled output) or
    "pretrain" (masked LM on max_predictions positions + next sentence)."""
    from bert_tf.model import BertClassifier, BertPretrainer
    from bert_tf.objectives.classification import ClassificationObjective
    from bert_tf.objectives.pretraining import PretrainingObjective
    from bert_tf.training.optimization import create_optimizer
    from bert_tf.training.trainer import Trainer

    encoder = BertEncoder(_config(cfg))
    features = {k: v for k, v in _inputs(cfg, batch, seq).items()}
    rng = np.random.default_rng(1)
    if task == "classify":
        model, objective = BertClassifier(encoder, num_classes=2), ClassificationObjective()
        features["label_ids"] = tf.constant(rng.integers(0, 2, (batch,), np.int32))
    elif task == "pretrain":
        model, objective = BertPretrainer(encoder), PretrainingObjective()
        p = cfg["max_predictions"]
        positions = np.sort(np.stack([rng.choice(np.arange(1, seq - 1), p, replace=False)
                                      for _ in range(batch)]), axis=1).astype(np.int32)
        features.update(
            masked_lm_positions=tf.constant(positions),
            masked_lm_ids=tf.constant(rng.integers(1000, cfg["vocab"], (batch, p), np.int32)),
            masked_lm_weights=tf.ones((batch, p), tf.float32),
            next_sentence_labels=tf.constant(rng.integers(0, 2, (batch, 1), np.int32)))
    else:
        raise ValueError(f"unknown task {task!r}")
    trainer = Trainer(model, create_optimizer(1e-4, 10_000, 100), objective,
                      jit_compile=jit_compile, checkpoint_iterator=False)
    dataset = tf.data.Dataset.from_tensors(features).repeat()
    iterator = iter(trainer.strategy.distribute_datasets_from_function(lambda ctx: dataset))
    one = tf.constant(1)
    return lambda: trainer._train_loop(iterator, one)

