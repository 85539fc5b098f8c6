"""run_pretraining: masked LM + next-sentence pre-training and evaluation."""

import dataclasses
import logging

from bert_tf.jobs.common import (TrainingOptions, build_trainer, check_seq_length,
                                 check_vocab_file, export_model, record_eval, start)

logger = logging.getLogger("bert_tf")


@dataclasses.dataclass(kw_only=True)
class PretrainingOptions(TrainingOptions):
    input_file: str
    eval_input_file: str = None
    max_predictions_per_seq: int = 20
    num_train_steps: int = 100000
    num_warmup_steps: int = 10000
    max_eval_steps: int = 100
    dynamic_masking: bool = False
    masked_lm_prob: float = 0.15
    do_whole_word_mask: bool = False
    use_next_sentence: bool = True

    serving_task = "encoder"

    def validate(self):
        if not (self.do_train or self.do_eval):
            raise ValueError("At least one of `do_train` or `do_eval` must be True.")
        if not self.input_file and (self.do_train or not self.eval_input_file):
            raise ValueError("--input_file is required")
        check_seq_length(self.max_seq_length, self.config)
        if self.dynamic_masking and not self.vocab_file:
            raise ValueError("--dynamic_masking needs --vocab_file (the ids of [MASK] and of "
                             "the special tokens come from it)")
        if self.dynamic_masking:
            check_vocab_file(self.vocab_file)
        self.validate_training()
        self.validate_export()


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


def check_inputs(opts):
    """The first record of the training and evaluation inputs, read before the model is built:
    a wrong file stops the run with its name rather than inside the first step."""
    from bert_tf.data.pretraining.dataset import check_first_record
    patterns = []
    if opts.do_train:
        patterns.append(opts.input_file)
    if opts.do_eval:
        patterns.append(opts.eval_input_file or opts.input_file)
    for pattern in dict.fromkeys(patterns):
        check_first_record(pattern, opts.max_seq_length, opts.max_predictions_per_seq,
                           opts.dynamic_masking)


def run(opts, strategy):
    """Trains and/or evaluates, then exports the encoder with --export_dir; returns {"train":
    values or None, "eval": values or None, "export": version path or None}."""
    from bert_tf.tasks.pretraining import PretrainingTask
    start(opts)
    check_inputs(opts)
    setup = build_trainer(opts, strategy, lambda: build_model(opts),
                          PretrainingTask(use_next_sentence=opts.use_next_sentence),
                          opts.num_train_steps, opts.num_warmup_steps)
    trainer = setup.trainer
    result = {"train": None, "eval": None, "export": None}
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
        result["eval"] = record_eval(opts, trainer.step, values)
    result["export"] = export_model(opts, setup.model)
    return result
