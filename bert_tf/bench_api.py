"""Plug-in for ../shared/bench (`--impl project --project_dir <this checkout>`).

The harness passes `cfg` with keys layers, hidden, heads, intermediate, vocab, max_position,
type_vocab, max_predictions, dropout. Inputs are fixed random ids, as for the peers.
"""

import numpy as np
import tensorflow as tf

from bert_tf.config import BertConfig
from bert_tf.model import BertEncoder


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
