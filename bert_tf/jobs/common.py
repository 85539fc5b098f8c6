"""Pieces every job shares: model initialisation, the optimiser, the trainer."""

import logging
import os

import keras

from bert_tf.checkpoints import load_weights
from bert_tf.training.optimization import create_optimizer
from bert_tf.training.trainer import Trainer

logger = logging.getLogger("bert_tf")


def init_from_checkpoint(model, init_checkpoint):
    """Loads `init_checkpoint` (any format) into `model`, logging what was loaded and which heads
    start fresh. Returns the LoadReport or None."""
    if not init_checkpoint:
        logger.info("no init_checkpoint: every weight is freshly initialised")
        return None
    report = load_weights(model, init_checkpoint)
    logger.info("init_checkpoint: %s", report.summary())
    if report.missing:
        logger.info("freshly initialised heads: %s", ", ".join(report.missing))
    return report


def make_optimizer(learning_rate, num_train_steps, num_warmup_steps, optimizer="adamw",
                   mixed_precision=None):
    opt = create_optimizer(learning_rate, num_train_steps, num_warmup_steps, optimizer)
    if mixed_precision == "fp16":
        opt = keras.optimizers.LossScaleOptimizer(opt)
    return opt


def make_trainer(model, optimizer, task, strategy, output_dir, *, iterations_per_loop,
                 save_checkpoints_steps, jit_compile=False, gradient_accumulation_steps=1,
                 keep_checkpoints=5):
    return Trainer(model, optimizer, task, strategy, output_dir,
                   steps_per_loop=iterations_per_loop, checkpoint_steps=save_checkpoints_steps,
                   keep_checkpoints=keep_checkpoints, jit_compile=jit_compile,
                   gradient_accumulation_steps=gradient_accumulation_steps)


def write_eval_summary(output_dir, step, values, subdir="eval"):
    """Eval metrics to TensorBoard (output_dir/eval)."""
    import tensorflow as tf
    writer = tf.summary.create_file_writer(os.path.join(output_dir, subdir))
    with writer.as_default(step=step):
        for key, value in values.items():
            if isinstance(value, (int, float)):
                tf.summary.scalar(key, value)
    writer.flush()
