"""run_pretraining: masked LM + next-sentence pre-training and evaluation."""

import dataclasses
import logging
import os

from bert_tf.config import BertConfig
from bert_tf.jobs.common import (init_from_checkpoint, make_optimizer, make_trainer,
                                 write_eval_summary)
from bert_tf.metrics.results import write_eval_results

logger = logging.getLogger("bert_tf")


@dataclasses.dataclass
class PretrainingOptions:
    config: BertConfig
    input_file: str
    output_dir: str
    init_checkpoint: str = None
    eval_input_file: str = None
    max_seq_length: int = 128
    max_predictions_per_seq: int = 20
    do_train: bool = False
    do_eval: bool = False
    train_batch_size: int = 32
    eval_batch_size: int = 8
    learning_rate: float = 5e-5
    num_train_steps: int = 100000
    num_warmup_steps: int = 10000
    save_checkpoints_steps: int = 1000
    iterations_per_loop: int = 1000
    max_eval_steps: int = 100
    optimizer: str = "adamw"
    gradient_accumulation_steps: int = 1
    dynamic_masking: bool = False
    vocab_file: str = None
    masked_lm_prob: float = 0.15
    do_whole_word_mask: bool = False
    use_next_sentence: bool = True
    mixed_precision: str = None
    jit_compile: bool = False
    seed: int = 12345

    def validate(self):
        if not (self.do_train or self.do_eval):
            raise ValueError("At least one of `do_train` or `do_eval` must be True.")
        if not self.input_file and (self.do_train or not self.eval_input_file):
            raise ValueError("--input_file is required")
        if self.max_seq_length > self.config.max_position_embeddings:
            raise ValueError(
                f"Cannot use sequence length {self.max_seq_length} because the BERT model was "
                f"only trained up to sequence length {self.config.max_position_embeddings}")
        if self.dynamic_masking and not self.vocab_file:
            raise ValueError("--dynamic_masking needs --vocab_file (the ids of [MASK] and of "
                             "the special tokens come from it)")


def _dataset_fn(opts, patterns, batch_size, is_training):
    from bert_tf.data.pretraining import make_pretraining_dataset

    def fn(input_context):
        return make_pretraining_dataset(
            patterns, batch_size, opts.max_seq_length, opts.max_predictions_per_seq,
            is_training=is_training, drop_remainder=is_training,
            dynamic_masking=opts.dynamic_masking, vocab_file=opts.vocab_file,
            masked_lm_prob=opts.masked_lm_prob, do_whole_word_mask=opts.do_whole_word_mask,
            seed=opts.seed, input_context=input_context)
    return fn


def build_model(opts):
    from bert_tf.model import BertEncoder, BertPretrainer
    return BertPretrainer(BertEncoder(opts.config))


def run(opts, strategy):
    """Trains and/or evaluates; returns {"train": values or None, "eval": values or None}."""
    from bert_tf.tasks.pretraining import PretrainingTask
    opts.validate()
    os.makedirs(opts.output_dir, exist_ok=True)
    opts.config.to_json_file(os.path.join(opts.output_dir, "bert_config.json"))
    with strategy.scope():
        model = build_model(opts)
        init_from_checkpoint(model, opts.init_checkpoint)
        optimizer = make_optimizer(opts.learning_rate, opts.num_train_steps,
                                   opts.num_warmup_steps, opts.optimizer, opts.mixed_precision)
    task = PretrainingTask(use_next_sentence=opts.use_next_sentence)
    trainer = make_trainer(model, optimizer, task, strategy, opts.output_dir,
                           iterations_per_loop=opts.iterations_per_loop,
                           save_checkpoints_steps=opts.save_checkpoints_steps,
                           jit_compile=opts.jit_compile,
                           gradient_accumulation_steps=opts.gradient_accumulation_steps)
    result = {"train": None, "eval": None}
    if opts.do_train:
        logger.info("***** Running training: %d steps, batch %d *****", opts.num_train_steps,
                    opts.train_batch_size)
        result["train"] = trainer.train(
            _dataset_fn(opts, opts.input_file, opts.train_batch_size, True),
            opts.num_train_steps, opts.train_batch_size)
        if result["train"]["preempted"]:
            return result
    else:
        trainer.restore()
    if opts.do_eval:
        patterns = opts.eval_input_file or opts.input_file
        logger.info("***** Running evaluation on %s: up to %d steps, batch %d *****", patterns,
                    opts.max_eval_steps, opts.eval_batch_size)
        values = trainer.evaluate(_dataset_fn(opts, patterns, opts.eval_batch_size, False),
                                  steps=opts.max_eval_steps)
        values["global_step"] = trainer.step
        path = write_eval_results(os.path.join(opts.output_dir, "eval_results.txt"), values)
        write_eval_summary(opts.output_dir, trainer.step, values)
        logger.info("***** Eval results (%s) *****", path)
        for key in sorted(values):
            logger.info("  %s = %s", key, values[key])
        result["eval"] = values
    return result
