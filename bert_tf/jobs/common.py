"""Pieces every job shares: the options every model run takes and their checks, model
initialisation, the optimiser, the trainer, eval results and SavedModel export."""

import dataclasses
import logging
import os

import keras

from bert_tf import fileio
from bert_tf.checkpoints import load_weights
from bert_tf.config import BertConfig
from bert_tf.metrics.results import write_eval_results
from bert_tf.options import option
from bert_tf.training.optimization import create_optimizer
from bert_tf.training.trainer import Trainer

logger = logging.getLogger("bert_tf")


# --------------------------------------------------------------------------- checks
def default_vocab_file(init_checkpoint):
    """vocab.txt beside --init_checkpoint (a folder or a checkpoint prefix), if there is one."""
    if not init_checkpoint:
        return None
    path = os.fspath(init_checkpoint)
    folder = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
    candidate = os.path.join(folder, "vocab.txt")
    return candidate if os.path.exists(candidate) else None


def check_vocab_file(vocab_file):
    if not vocab_file:
        raise ValueError("--vocab_file is required (or an --init_checkpoint folder holding "
                         "vocab.txt)")
    if not fileio.exists(vocab_file):
        raise FileNotFoundError(f"--vocab_file {vocab_file} does not exist")


def check_seq_length(max_seq_length, config, minimum=None):
    """google-research's check against the position table, and a floor for the packing."""
    if max_seq_length > config.max_position_embeddings:
        raise ValueError(
            f"Cannot use sequence length {max_seq_length} because the BERT model was "
            f"only trained up to sequence length {config.max_position_embeddings}")
    if minimum and max_seq_length < minimum:
        raise ValueError(f"--max_seq_length must be >= {minimum}, got {max_seq_length}")


def check_vocab_size(num_tokens, opts):
    """A vocabulary larger than the embedding table is the wrong one for this model."""
    if num_tokens > opts.config.vocab_size:
        raise ValueError(f"--vocab_file {opts.vocab_file} has {num_tokens} tokens but the "
                         f"model's vocab_size is {opts.config.vocab_size}: wrong vocabulary "
                         f"for this model")


def load_tokenizer(opts):
    """google-research's FullTokenizer for opts.vocab_file, checked against the model."""
    from bert_tf.tokenization import FullTokenizer
    tokenizer = FullTokenizer(opts.vocab_file, do_lower_case=opts.do_lower_case)
    check_vocab_size(len(tokenizer.vocab), opts)
    return tokenizer


# --------------------------------------------------------------------------- options
# Every option() field below is also a command-line flag (bert_tf.options): runners define
# their flags from their job's options class and build it back from them.
EXPORT_HELP = {
    "precision": "fp32, or bf16: bfloat16 weights and matmuls (float32 LayerNorm, softmax and "
                 "outputs; faster on CPUs with AVX512_BF16 or AMX, see "
                 "benchmarks/results/serving.md); default: as trained.",
    "jit_compile": "XLA-compile the model function (requests are padded to a few bucket "
                   "shapes; the warm-up requests compile batch 1 at each length while the "
                   "server loads); tensorflow_model_server needs "
                   "--xla_cpu_compilation_enabled=true.",
}


@dataclasses.dataclass(kw_only=True)
class RuntimeOptions:
    """Where and how TensorFlow runs: the tf.distribute strategy (google-research's TPU flags
    included), precision, XLA, seeds and determinism."""

    strategy: str = option("default", "tf.distribute strategy.",
                           choices=("default", "one_device", "mirrored", "multi_worker", "tpu"))
    num_cpu_devices: int = option(
        0, "Split the CPU into this many logical devices (for --strategy=mirrored on a machine "
        "without GPUs).")
    mixed_precision: str = option(None, "Mixed precision: bf16, or fp16 with dynamic loss "
                                  "scaling.", choices=("bf16", "fp16"))
    jit_compile: bool = option(False, "Compile the model step with XLA.")
    seed: int = option(12345, "Random seed (weights init, dropout, data order).")
    deterministic: bool = option(False, "Deterministic TensorFlow ops (reproducible runs; "
                                 "slower).")
    use_tpu: bool = option(False, "Whether to use TPU (same as --strategy=tpu).")
    tpu_name: str = option(None, "The Cloud TPU to use for training.")
    tpu_zone: str = option(None, "GCE zone of the Cloud TPU.")
    gcp_project: str = option(None, "GCP project of the Cloud TPU.")
    master: str = option(None, "TensorFlow master URL (overrides tpu_name).")
    num_tpu_cores: int = option(8, "Kept for compatibility: TPUStrategy uses every core of the "
                                "TPU.")

    def start_runtime(self):
        """Logical CPU devices, seeds, determinism, the precision policy and the strategy, in
        the order TensorFlow needs; returns the strategy."""
        import tensorflow as tf

        from bert_tf.training.distribution import (get_strategy, set_mixed_precision,
                                                   split_cpu_devices)
        if self.num_cpu_devices:
            split_cpu_devices(self.num_cpu_devices)
        keras.utils.set_random_seed(self.seed)
        if self.deterministic:
            tf.config.experimental.enable_op_determinism()
        set_mixed_precision(self.mixed_precision)
        return get_strategy(self.strategy, use_tpu=self.use_tpu, tpu_name=self.tpu_name,
                            tpu_zone=self.tpu_zone, gcp_project=self.gcp_project,
                            master=self.master)


@dataclasses.dataclass(kw_only=True)
class ModelOptions:
    """What every job that runs a BERT model takes. Subclasses set `serving_task` (what
    --export_dir exports) and `min_seq_length`."""

    config: BertConfig
    init_checkpoint: str = option(
        None, "Initial weights: a google-research TF1 checkpoint prefix, a HuggingFace folder "
        "or a native (bert_tf) checkpoint.")
    vocab_file: str = option(
        None, "The vocabulary file the BERT model was trained on (default: vocab.txt beside "
        "--init_checkpoint).")
    do_lower_case: bool = option(
        True, "Lower-case the input (True for uncased models, False for cased ones).")
    max_seq_length: int = option(
        128, "Maximum total input length after WordPiece tokenization; longer inputs are "
        "truncated.")
    export_dir: str = option(
        None, "After the run, export the model for TensorFlow Serving as the next numbered "
        "version in this folder (raw-text, int32-feature and tf.Example signatures, as "
        "export_savedmodel.py writes them).")
    export_precision: str = option(None, "--export_dir: " + EXPORT_HELP["precision"],
                                   choices=("fp32", "bf16"))
    export_jit_compile: bool = option(False, "--export_dir: " + EXPORT_HELP["jit_compile"])

    serving_task = None
    min_seq_length = 3                   # [CLS] token [SEP]

    def resolve_vocab_file(self):
        if not self.vocab_file:
            self.vocab_file = default_vocab_file(self.init_checkpoint)
            if self.vocab_file:
                logger.info("vocab_file: %s (beside --init_checkpoint)", self.vocab_file)

    def validate_model(self):
        """Casing, vocabulary, sequence length and export checks."""
        from bert_tf.tokenization import validate_case_matches_checkpoint
        validate_case_matches_checkpoint(self.do_lower_case, self.init_checkpoint)
        check_vocab_file(self.vocab_file)
        check_seq_length(self.max_seq_length, self.config, self.min_seq_length)
        self.validate_export()

    def validate_export(self):
        if not self.export_dir:
            return
        from bert_tf.serving import TASKS
        if self.serving_task not in TASKS:
            raise ValueError(f"--export_dir: no {self.serving_task!r} serving task in this "
                             f"version of bert_tf.serving (it has {', '.join(TASKS)})")
        check_vocab_file(self.vocab_file)
        from bert_tf.serving.exporter import check_compute_options
        check_compute_options(self.serving_task, self.export_precision, self.export_jit_compile,
                              ("--export_precision", "--export_jit_compile"))
        from bert_tf.serving.warmup import require_serving_api
        require_serving_api("--export_dir")     # before training, not after it


@dataclasses.dataclass(kw_only=True)
class TrainingOptions(ModelOptions, RuntimeOptions):
    """What every training job (pre-training, fine-tuning) takes: google-research's training
    flags and ours (optimizer, decay, accumulation)."""

    output_dir: str = option(None, "Where checkpoints, results and predictions go.",
                             required=True)
    do_train: bool = option(False, "Whether to run training.")
    do_eval: bool = option(False, "Whether to run eval on the dev set.")
    train_batch_size: int = option(32, "Total batch size for training.")
    eval_batch_size: int = option(8, "Total batch size for eval.")
    learning_rate: float = option(5e-5, "The initial learning rate for Adam.")
    save_checkpoints_steps: int = option(1000, "How often to save the model checkpoint.")
    iterations_per_loop: int = option(1000, "Steps per tf.function call (and per progress "
                                      "line).")
    optimizer: str = option(
        "adamw", "adamw: google-research's AdamW (no bias correction, epsilon 1e-6); "
        "adamw_torch: torch.optim.AdamW / HuggingFace Trainer (bias-corrected, epsilon 1e-8); "
        "lamb: LAMB for large batches.", choices=("adamw", "adamw_torch", "lamb"))
    lr_decay_from: str = option(
        "warmup_end", "Where the linear learning-rate decay starts: warmup_end (HuggingFace: "
        "from the peak when warm-up ends) or start (google-research: the line from the peak at "
        "step 0 to 0 at the last step: after warm-up, lower by up to the warm-up share of the "
        "peak).", choices=("warmup_end", "start"))
    gradient_accumulation_steps: int = option(
        1, "Split each batch into this many micro-batches and sum their gradients.")

    positive_fields = ("train_batch_size", "eval_batch_size", "iterations_per_loop",
                       "gradient_accumulation_steps")

    def validate_training(self):
        for name in self.positive_fields:
            if getattr(self, name) < 1:
                raise ValueError(f"--{name} must be >= 1, got {getattr(self, name)}")


def start(opts):
    """Fills in the vocabulary, validates, and creates output_dir (local or URL) with
    bert_config.json."""
    opts.resolve_vocab_file()
    opts.validate()
    fileio.makedirs(opts.output_dir)
    opts.config.to_json_file(os.path.join(opts.output_dir, "bert_config.json"))


# --------------------------------------------------------------------------- model + trainer
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
                   mixed_precision=None, lr_decay_from="warmup_end"):
    opt = create_optimizer(learning_rate, num_train_steps, num_warmup_steps, optimizer,
                           lr_decay_from=lr_decay_from)
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


def _count(variables):
    return sum(int(v.numpy().size) for v in variables)


def freeze(model, freeze_encoder=False, freeze_layers=0, from_checkpoint=True):
    """Marks the encoder of a task model (freeze_encoder), or its embeddings and first
    `freeze_layers` Transformer blocks, trainable=False: the Trainer optimises
    model.trainable_variables only, so they keep their values; checkpoints still hold every
    variable. Logs how many weights stay trainable. Call it before the Trainer builds the
    optimizer."""
    if not (freeze_encoder or freeze_layers):
        return
    encoder = getattr(model, "encoder", model)
    if freeze_encoder:
        encoder.trainable = False
        what = "the whole encoder"
    else:
        encoder.embeddings.trainable = False
        for block in encoder.blocks[:freeze_layers]:
            block.trainable = False
        what = (f"embeddings + Transformer layer{'s' if freeze_layers > 1 else ''} "
                f"{', '.join(str(i) for i in range(freeze_layers))}")
    frozen = [w for w in model.weights if not w.trainable and "seed_generator" not in w.path]
    trainable = model.trainable_weights
    logger.info("frozen: %s; %d weights (%s parameters) trainable, %d (%s) frozen", what,
                len(trainable), f"{_count(trainable):,}", len(frozen), f"{_count(frozen):,}")
    if not from_checkpoint:
        logger.warning("freezing freshly initialised weights: no --init_checkpoint was given")


@dataclasses.dataclass
class Setup:
    model: keras.Model
    trainer: Trainer
    report: object            # the init_checkpoint LoadReport, None without init_checkpoint


def build_trainer(opts, strategy, build_model, task, num_train_steps=1, num_warmup_steps=0,
                  iterations_per_loop=None):
    """Under strategy.scope(): build_model(), init_checkpoint's weights and the optimizer
    (linear warm-up then decay over num_train_steps); then the Trainer on output_dir."""
    import tensorflow as tf
    if opts.export_dir and isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        raise ValueError("--export_dir is not supported with --strategy=multi_worker: export "
                         "the trained checkpoint with export_savedmodel.py")
    with strategy.scope():
        model = build_model()
        report = init_from_checkpoint(model, opts.init_checkpoint)
        freeze(model, getattr(opts, "freeze_encoder", False), getattr(opts, "freeze_layers", 0),
               from_checkpoint=report is not None)
        optimizer = make_optimizer(opts.learning_rate, num_train_steps, num_warmup_steps,
                                   opts.optimizer, opts.mixed_precision, opts.lr_decay_from)
    trainer = make_trainer(model, optimizer, task, strategy, opts.output_dir,
                           iterations_per_loop=iterations_per_loop or opts.iterations_per_loop,
                           save_checkpoints_steps=opts.save_checkpoints_steps,
                           jit_compile=opts.jit_compile,
                           gradient_accumulation_steps=opts.gradient_accumulation_steps)
    return Setup(model, trainer, report)


def arrays_dataset_fn(arrays, global_batch_size, is_training, seed=None):
    """The Trainer's dataset_fn(input_context) over in-memory feature arrays
    (bert_tf.data.arrays.arrays_dataset at the per-replica batch size)."""
    from bert_tf.data.arrays import arrays_dataset

    def fn(input_context):
        batch = input_context.get_per_replica_batch_size(global_batch_size)
        return arrays_dataset(arrays, batch, is_training, seed=seed, input_context=input_context)
    return fn


# --------------------------------------------------------------------------- results
def save_label_list(output_dir, labels):
    """Writes output_dir/label_list.txt (the labels in class-id order, one per line: what
    bert_tf.predict and a rerun read beside the run's checkpoints). Returns {its name: its
    text}, the files best/ gets too ({} when a label cannot be written one per line)."""
    from bert_tf.data.classification.writers import label_list_text
    from bert_tf.serving.names import LABELS_FILE
    try:
        text = label_list_text(labels)
    except ValueError as e:
        logger.warning("no %s (%s): predicting from this run's checkpoints needs --labels",
                       LABELS_FILE, e)
        return {}
    fileio.atomic_write_text(os.path.join(output_dir, LABELS_FILE), text)
    return {LABELS_FILE: text}


def write_eval_summary(output_dir, step, values, subdir="eval"):
    """Eval metrics to TensorBoard (output_dir/eval)."""
    import tensorflow as tf
    writer = tf.summary.create_file_writer(os.path.join(output_dir, subdir))
    with writer.as_default(step=step):
        for key, value in values.items():
            if isinstance(value, (int, float)):
                tf.summary.scalar(key, value)
    writer.flush()


def log_values(title, values):
    logger.info("***** %s *****", title)
    for key in sorted(values):
        logger.info("  %s = %s", key, values[key])


def record_eval(opts, step, values, *, filename="eval_results.txt", writer=write_eval_results,
                summary_keys=None):
    """Adds global_step to `values` and writes them to output_dir/<filename> (google's
    "key = value" lines unless `writer` says otherwise), TensorBoard (the `summary_keys` only,
    when given: the others are there already) and the log. Returns `values`."""
    values["global_step"] = step
    path = os.path.join(opts.output_dir, filename)
    writer(path, values)
    write_eval_summary(opts.output_dir, step, values if summary_keys is None
                       else {k: values[k] for k in summary_keys})
    log_values(f"Eval results ({path})", values)
    return values


def export_model(opts, model, task=None, seq_length=None, **task_options):
    """With opts.export_dir: exports `model` as serving `task` (default opts.serving_task) for
    TensorFlow Serving (bert_tf.serving.export) with the run's vocabulary, casing and
    max_seq_length; returns the new version folder. Without it: None."""
    if not opts.export_dir:
        return None
    from bert_tf.serving import export
    return export(model, task or opts.serving_task, opts.export_dir, opts.vocab_file,
                  opts.do_lower_case, seq_length or opts.max_seq_length,
                  precision=opts.export_precision, jit_compile=opts.export_jit_compile,
                  **task_options)


def summary_lines(result, eval_keys=None, predictions=None):
    """What a runner prints of a job's result: training, eval (`eval_keys`, default all),
    predictions (`predictions(result["predict"])`, a string) and export lines."""
    lines = []
    train, evaluation = result.get("train"), result.get("eval")
    if train:
        loss = f", loss {train['loss']:.4f}" if "loss" in train else ""
        lines.append(f"training: step {train['step']}{loss}"
                     + (" (stopped early)" if train.get("stopped_early") else "")
                     + (" (preempted: rerun the same command to resume)" if train["preempted"]
                        else ""))
    if result.get("best_step") is not None:
        lines.append(f"best checkpoint: step {result['best_step']}")
    if evaluation:
        keys = eval_keys or sorted(evaluation)
        lines.append("eval: " + ", ".join(
            f"{k}={evaluation[k]:.4f}" if isinstance(evaluation[k], float)
            else f"{k}={evaluation[k]}" for k in keys if k in evaluation))
    if predictions and result.get("predict"):
        lines.append(f"predictions: {predictions(result['predict'])}")
    if result.get("export"):
        lines.append(f"exported: {result['export']}")
    return lines
