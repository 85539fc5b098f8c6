"""run_pretraining: masked LM + next-sentence pre-training and evaluation.

--do_eval evaluates on --eval_input_file (default: --input_file, as google-research) for up to
--max_eval_steps batches. --eval_every_steps runs that evaluation during training and keeps the
weights with the lowest held-out masked-LM loss (or --keep_best_metric) in output_dir/best/
(bert_tf.jobs.finetune.train_with_evaluation)."""

import dataclasses
import logging

from bert_tf import contract as _contract
from bert_tf.jobs.checks import check_seq_length, check_vocab_file
from bert_tf.jobs.options import start, TrainingOptions
from bert_tf.jobs.results import export_model, record_eval
from bert_tf.training.setup import build_trainer
from bert_tf.jobs.finetune import TrainingPlan, train_with_evaluation
from bert_tf.options import option
from bert_tf.training.best import EvaluationOptions

logger = logging.getLogger("bert_tf")

DEFAULT_METRIC = "masked_lm_loss"        # held-out masked-LM cross-entropy: lower is better


@dataclasses.dataclass(kw_only=True)
class PretrainingOptions(TrainingOptions, EvaluationOptions):
    vocab_file: str = option(
        None, "Vocabulary (needed by --dynamic_masking and --export_dir; default: vocab.txt "
        "beside --init_checkpoint).")
    do_lower_case: bool = option(
        True, "Whether the exported model lower-cases its input (--export_dir).")
    export_dir: str = option(
        None, "After the run, export the encoder for TensorFlow Serving as the next numbered "
        "version in this folder (pooled_output and sequence_output of raw text; see "
        "export_savedmodel.py).")
    output_dir: str = option(None, "Where checkpoints, summaries and results go.",
                             required=True)
    max_seq_length: int = option(_contract.MAX_SEQ_LENGTH,
                                 "Sequence length the input files were written with.")
    iterations_per_loop: int = option(1000, "Steps per tf.function call (and per log line).")
    input_file: str = option(None, "Input TF example files (comma-separated globs).",
                             required=True)
    eval_input_file: str = option(
        None, "Held-out files for --do_eval (default: --input_file, as the original).")
    max_predictions_per_seq: int = option(20, "Masked LM predictions per sequence.")
    num_train_steps: int = option(100000, "Number of training steps.")
    num_warmup_steps: int = option(10000, "Number of warmup steps.")
    max_eval_steps: int = option(100, "Maximum number of eval steps.")
    dynamic_masking: bool = option(
        False, "Input files hold unmasked sequences; mask them afresh on every read.")
    masked_lm_prob: float = option(0.15, "Masked LM probability (--dynamic_masking).")
    do_whole_word_mask: bool = option(False, "Whole-word masking (--dynamic_masking).")
    use_next_sentence: bool = option(True, "Train the next-sentence head (False: MLM only).")

    serving_kind = "encoder"

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
        self.validate_evaluation()
        self.validate_export()

    @property
    def eval_patterns(self):
        """What evaluation reads: --eval_input_file, else --input_file (google-research)."""
        return self.eval_input_file or self.input_file


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
    if opts.do_eval or opts.eval_every_steps:
        patterns.append(opts.eval_patterns)
    for pattern in dict.fromkeys(patterns):
        check_first_record(pattern, opts.max_seq_length, opts.max_predictions_per_seq,
                           opts.dynamic_masking)


def run(opts, strategy):
    """Trains (evaluating every --eval_every_steps) and/or evaluates, then exports the encoder
    with --export_dir; returns {"train": values or None, "eval": values or None, "export":
    version path or None} (and "best_step" with --eval_every_steps)."""
    from bert_tf.objectives.pretraining import PretrainingObjective
    start(opts)
    check_inputs(opts)
    setup = build_trainer(opts, strategy, lambda: build_model(opts),
                          PretrainingObjective(use_next_sentence=opts.use_next_sentence),
                          opts.num_train_steps, opts.num_warmup_steps)
    trainer = setup.trainer
    result = {"train": None, "eval": None, "export": None}
    if opts.eval_every_steps and opts.do_train and not opts.eval_input_file:
        logger.warning("--eval_every_steps without --eval_input_file evaluates on the training "
                       "files: best/ then follows the training loss, not held-out data")

    def evaluate_heldout(step):
        logger.info("***** Running evaluation at step %d on %s: up to %d steps, batch %d *****",
                    step, opts.eval_patterns, opts.max_eval_steps, opts.eval_batch_size)
        return trainer.evaluate(_dataset_fn(opts, opts.eval_patterns, opts.eval_batch_size,
                                            False), steps=opts.max_eval_steps)

    train_fn = None
    if opts.do_train:
        train_fn = _dataset_fn(opts, opts.input_file, opts.train_batch_size, True)
    trained = train_with_evaluation(opts, setup, TrainingPlan(
        train_fn, opts.num_train_steps, opts.num_warmup_steps, f"records {opts.input_file}",
        evaluate=evaluate_heldout, default_metric=DEFAULT_METRIC))
    result["train"] = trained.train
    if trained.preempted:
        return result
    if trained.best_step is not None:
        result["best_step"] = trained.best_step
    if opts.do_eval:
        values = trained.evaluation()           # a periodic evaluation of this step: reused
        summarized = values is not None         # (in TensorBoard already)
        if values is None:
            values = evaluate_heldout(trained.step)
        result["eval"] = record_eval(opts, trained.step, values,
                                     summary_keys=[] if summarized else None)
    result["export"] = export_model(opts, setup.model)
    return result
