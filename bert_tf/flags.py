"""absl flags shared by the runners (names and defaults of google-research/bert where it has
them), and helpers that turn them into library objects."""

import logging
import os
import sys

from absl import flags

from bert_tf import fileio
from bert_tf.config import BertConfig

FLAGS = flags.FLAGS


def define_model_flags():
    flags.DEFINE_string("bert_config_file", None,
                        "bert_config.json (google-research) or config.json (HuggingFace).")
    flags.DEFINE_string("model_preset", None,
                        "Instead of bert_config_file: tiny, mini, small, medium, base, large or "
                        "L-x_H-y_A-z.")
    flags.DEFINE_string("init_checkpoint", None,
                        "Initial weights: a google-research TF1 checkpoint prefix, a HuggingFace "
                        "folder or a native (bert_tf) checkpoint.")


def define_tpu_flags():
    flags.DEFINE_bool("use_tpu", False, "Whether to use TPU (same as --strategy=tpu).")
    flags.DEFINE_string("tpu_name", None, "The Cloud TPU to use for training.")
    flags.DEFINE_string("tpu_zone", None, "GCE zone of the Cloud TPU.")
    flags.DEFINE_string("gcp_project", None, "GCP project of the Cloud TPU.")
    flags.DEFINE_string("master", None, "TensorFlow master URL (overrides tpu_name).")
    flags.DEFINE_integer("num_tpu_cores", 8,
                         "Kept for compatibility: TPUStrategy uses every core of the TPU.")


def define_runtime_flags():
    flags.DEFINE_enum("strategy", "default",
                      ["default", "one_device", "mirrored", "multi_worker", "tpu"],
                      "tf.distribute strategy.")
    flags.DEFINE_integer("num_cpu_devices", 0,
                         "Split the CPU into this many logical devices (for --strategy=mirrored "
                         "on a machine without GPUs).")
    flags.DEFINE_enum("mixed_precision", None, ["bf16", "fp16"],
                      "Mixed precision: bf16, or fp16 with dynamic loss scaling.")
    flags.DEFINE_bool("jit_compile", False, "Compile the model step with XLA.")
    flags.DEFINE_integer("seed", 12345, "Random seed (weights init, dropout, data order).")
    flags.DEFINE_bool("deterministic", False,
                      "Deterministic TensorFlow ops (reproducible runs; slower).")


# Help texts of the shared flags; runners override the ones whose meaning is theirs.
_HELP = {
    "vocab_file": "The vocabulary file the BERT model was trained on (default: vocab.txt "
                  "beside --init_checkpoint).",
    "do_lower_case": "Lower-case the input (True for uncased models, False for cased ones).",
    "max_seq_length": "Maximum total input length after WordPiece tokenization; longer inputs "
                      "are truncated.",
    "export_dir": "After the run, export the model for TensorFlow Serving as the next numbered "
                  "version in this folder (raw-text, int32-feature and tf.Example signatures, "
                  "as export_savedmodel.py writes them).",
    "output_dir": "Where checkpoints, results and predictions go.",
    "do_train": "Whether to run training.",
    "do_eval": "Whether to run eval on the dev set.",
    "do_predict": "Whether to run prediction on the test set.",
    "train_batch_size": "Total batch size for training.",
    "eval_batch_size": "Total batch size for eval.",
    "predict_batch_size": "Total batch size for predict.",
    "learning_rate": "The initial learning rate for Adam.",
    "num_train_epochs": "Total number of training epochs to perform.",
    "warmup_proportion": "Proportion of training to perform linear learning rate warmup for.",
    "save_checkpoints_steps": "How often to save the model checkpoint.",
    "iterations_per_loop": "Steps per tf.function call (and per progress line).",
    "optimizer": "adamw: google-research's AdamW (no bias correction, epsilon 1e-6); "
                 "adamw_torch: torch.optim.AdamW / HuggingFace Trainer (bias-corrected, "
                 "epsilon 1e-8); lamb: LAMB for large batches.",
    "lr_decay_from": "Where the linear learning-rate decay starts: warmup_end (HuggingFace: "
                     "from the peak when warm-up ends) or start (google-research: the line "
                     "from the peak at step 0 to 0 at the last step: after warm-up, lower by up "
                     "to the warm-up share of the peak).",
    "gradient_accumulation_steps": "Split each batch into this many micro-batches and sum "
                                   "their gradients.",
}

# Help of the export flags (--export_precision here, --precision in export_savedmodel.py).
EXPORT_HELP = {
    "precision": "fp32, or bf16: bfloat16 weights and matmuls (float32 LayerNorm, softmax and "
                 "outputs; faster on CPUs with AVX512_BF16 or AMX, see "
                 "benchmarks/results/serving.md); default: as trained.",
    "jit_compile": "XLA-compile the model function (requests are padded to a few bucket "
                   "shapes; the warm-up requests compile batch 1 at each length while the "
                   "server loads); tensorflow_model_server needs "
                   "--xla_cpu_compilation_enabled=true.",
}

# Flags whose values become the options of bert_tf.jobs.common.ModelOptions and its subclasses.
MODEL_OPTIONS = ("init_checkpoint", "vocab_file", "do_lower_case", "max_seq_length",
                 "export_dir", "export_precision", "export_jit_compile")
TRAINING_OPTIONS = MODEL_OPTIONS + (
    "output_dir", "do_train", "do_eval", "train_batch_size", "eval_batch_size", "learning_rate",
    "save_checkpoints_steps", "iterations_per_loop", "optimizer", "lr_decay_from",
    "gradient_accumulation_steps", "mixed_precision", "jit_compile", "seed")
FINETUNE_OPTIONS = TRAINING_OPTIONS + ("do_predict", "predict_batch_size", "num_train_epochs",
                                       "warmup_proportion")


def define_vocab_flags(helps=None):
    """--vocab_file, --do_lower_case."""
    helps = dict(_HELP, **(helps or {}))
    flags.DEFINE_string("vocab_file", None, helps["vocab_file"])
    flags.DEFINE_bool("do_lower_case", True, helps["do_lower_case"])


def define_export_flag(helps=None):
    """--export_dir, and how the exported model computes."""
    flags.DEFINE_string("export_dir", None, dict(_HELP, **(helps or {}))["export_dir"])
    flags.DEFINE_enum("export_precision", None, ["fp32", "bf16"],
                      "--export_dir: " + EXPORT_HELP["precision"])
    flags.DEFINE_bool("export_jit_compile", False, "--export_dir: " + EXPORT_HELP["jit_compile"])


def define_training_flags(*, max_seq_length=128, train_batch_size=32, learning_rate=5e-5,
                          eval_batch_size=True, helps=None):
    """The flags of every training runner: model, TPU and runtime flags, the vocabulary,
    --output_dir, --max_seq_length, --do_train/--do_eval, batch sizes, the optimizer,
    checkpointing and --export_dir. `helps` overrides help texts by flag name."""
    helps = dict(_HELP, **(helps or {}))
    define_model_flags()
    define_tpu_flags()
    define_runtime_flags()
    define_vocab_flags(helps)
    define_export_flag(helps)
    flags.DEFINE_string("output_dir", None, helps["output_dir"])
    flags.DEFINE_integer("max_seq_length", max_seq_length, helps["max_seq_length"])
    flags.DEFINE_bool("do_train", False, helps["do_train"])
    flags.DEFINE_bool("do_eval", False, helps["do_eval"])
    flags.DEFINE_integer("train_batch_size", train_batch_size, helps["train_batch_size"])
    if eval_batch_size:
        flags.DEFINE_integer("eval_batch_size", 8, helps["eval_batch_size"])
    flags.DEFINE_float("learning_rate", learning_rate, helps["learning_rate"])
    flags.DEFINE_integer("save_checkpoints_steps", 1000, helps["save_checkpoints_steps"])
    flags.DEFINE_integer("iterations_per_loop", 1000, helps["iterations_per_loop"])
    flags.DEFINE_enum("optimizer", "adamw", ["adamw", "adamw_torch", "lamb"], helps["optimizer"])
    flags.DEFINE_enum("lr_decay_from", "warmup_end", ["warmup_end", "start"],
                      helps["lr_decay_from"])
    flags.DEFINE_integer("gradient_accumulation_steps", 1,
                         helps["gradient_accumulation_steps"])


def define_finetune_flags(*, helps=None, **defaults):
    """define_training_flags(**defaults) plus google-research's fine-tuning flags:
    --do_predict, --predict_batch_size, --num_train_epochs, --warmup_proportion."""
    define_training_flags(helps=helps, **defaults)
    helps = dict(_HELP, **(helps or {}))
    flags.DEFINE_bool("do_predict", False, helps["do_predict"])
    flags.DEFINE_integer("predict_batch_size", 8, helps["predict_batch_size"])
    flags.DEFINE_float("num_train_epochs", 3.0, helps["num_train_epochs"])
    flags.DEFINE_float("warmup_proportion", 0.1, helps["warmup_proportion"])
    from bert_tf.jobs.finetune import FinetuneOptions
    from bert_tf.options import define_flags
    define_flags(FinetuneOptions)


def config_from_flags():
    """The BertConfig named by --bert_config_file or --model_preset (exactly one)."""
    if bool(FLAGS.bert_config_file) == bool(FLAGS.model_preset):
        raise ValueError("give exactly one of --bert_config_file and --model_preset")
    if FLAGS.model_preset:
        return BertConfig.from_preset(FLAGS.model_preset)
    return BertConfig.from_json_file(FLAGS.bert_config_file)


def config_from_flags_or_checkpoint():
    """--bert_config_file / --model_preset, else the config beside --init_checkpoint."""
    if not FLAGS.bert_config_file and not FLAGS.model_preset and FLAGS.init_checkpoint:
        from bert_tf.checkpoints import find_config
        return find_config(FLAGS.init_checkpoint)
    return config_from_flags()


def _options(names):
    """config plus {name: value} of the flags among `names` that this runner defines."""
    return dict(config=config_from_flags_or_checkpoint(),
                **{name: FLAGS[name].value for name in names if name in FLAGS})


def model_options(*names):
    """Keyword arguments of a ModelOptions subclass: the config, the shared model flags and
    the runner's own flags `names` (each named as its option)."""
    return _options(MODEL_OPTIONS + names)


def training_options(*names):
    """The same for a TrainingOptions subclass (run_pretraining)."""
    return _options(TRAINING_OPTIONS + names)


def finetune_options(*names):
    """The same for a FinetuneOptions subclass (define_finetune_flags() runners), with every
    option() field of FinetuneOptions."""
    from bert_tf.jobs.finetune import FinetuneOptions
    from bert_tf.options import flag_fields
    return _options(FINETUNE_OPTIONS + tuple(f.name for f in flag_fields(FinetuneOptions))
                    + names)


def runtime_from_flags():
    """Seeds, determinism, precision policy and the strategy, in the order TF needs."""
    import keras
    import tensorflow as tf

    from bert_tf.training.distribution import (get_strategy, set_mixed_precision,
                                               split_cpu_devices)
    if FLAGS.num_cpu_devices:
        split_cpu_devices(FLAGS.num_cpu_devices)
    keras.utils.set_random_seed(FLAGS.seed)
    if FLAGS.deterministic:
        tf.config.experimental.enable_op_determinism()
    set_mixed_precision(FLAGS.mixed_precision)
    return get_strategy(FLAGS.strategy, use_tpu=FLAGS.use_tpu, tpu_name=FLAGS.tpu_name,
                        tpu_zone=FLAGS.tpu_zone, gcp_project=FLAGS.gcp_project,
                        master=FLAGS.master)


def setup_logging(output_dir=None):
    """INFO to stderr, and to output_dir/log.txt when given and local (a URL output_dir gets no
    log.txt: object stores cannot append; a warning says so)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    from absl import logging as absl_logging
    absl_logging.set_verbosity(absl_logging.INFO)
    root = logging.getLogger()
    root.setLevel(logging.INFO)
    if not any(getattr(h, "_bert_tf", False) for h in root.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s", "%H:%M:%S"))
        handler._bert_tf = True
        root.addHandler(handler)
        absl_logging.get_absl_handler().setLevel(logging.WARNING)
    if output_dir and fileio.is_url(output_dir):
        logging.getLogger("bert_tf").warning(
            "--output_dir %s is a URL: the log goes to stderr only, not to log.txt there",
            output_dir)
    elif output_dir:
        os.makedirs(output_dir, exist_ok=True)
        file_handler = logging.FileHandler(os.path.join(output_dir, "log.txt"))
        file_handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        root.addHandler(file_handler)
