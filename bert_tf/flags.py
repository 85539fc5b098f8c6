"""absl flags shared by the runners (names and defaults of google-research/bert where it has
them), and helpers that turn them into library objects."""

import logging
import os
import sys

from absl import flags

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


def config_from_flags():
    """The BertConfig named by --bert_config_file or --model_preset (exactly one)."""
    if bool(FLAGS.bert_config_file) == bool(FLAGS.model_preset):
        raise ValueError("give exactly one of --bert_config_file and --model_preset")
    if FLAGS.model_preset:
        return BertConfig.from_preset(FLAGS.model_preset)
    return BertConfig.from_json_file(FLAGS.bert_config_file)


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
    """INFO to stderr, and to output_dir/log.txt when given."""
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
    if output_dir:
        os.makedirs(output_dir, exist_ok=True)
        file_handler = logging.FileHandler(os.path.join(output_dir, "log.txt"))
        file_handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        root.addHandler(file_handler)
