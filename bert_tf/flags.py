"""The runners' command lines: their flags come from their job's options class (every
option() field is a flag, bert_tf.options), plus --bert_config_file / --model_preset, which
make the options' BertConfig; and logging setup.

    common.define_job_flags(SwagOptions)          # at import, before absl parses argv
    opts = common.job_options(SwagOptions)        # in main(): the parsed flags as options
"""

import logging
import os
import sys

from absl import flags

from bert_tf import fileio
from bert_tf.config import BertConfig

FLAGS = flags.FLAGS


def define_config_flags():
    """--bert_config_file, --model_preset (what config_from_flags reads)."""
    flags.DEFINE_string("bert_config_file", None,
                        "bert_config.json (google-research) or config.json (HuggingFace).")
    flags.DEFINE_string("model_preset", None,
                        "Instead of bert_config_file: tiny, mini, small, medium, base, large or "
                        "L-x_H-y_A-z.")


def define_model_flags():
    """--bert_config_file, --model_preset and --init_checkpoint (ModelOptions' help)."""
    from bert_tf.jobs.options import ModelOptions
    from bert_tf.options import define_flags
    define_config_flags()
    define_flags(ModelOptions, ["init_checkpoint"])


def define_job_flags(options_class):
    """define_config_flags() and one flag per option() field of `options_class` (a
    ModelOptions subclass): its name, type, default, choices and help."""
    from bert_tf.options import define_flags
    define_config_flags()
    define_flags(options_class)


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


def job_options(options_class, **values):
    """`options_class` built from the parsed flags (its BertConfig from --bert_config_file /
    --model_preset, else the config beside --init_checkpoint); `values` are fields that are
    not flags."""
    from bert_tf.options import flag_values
    return options_class(config=config_from_flags_or_checkpoint(),
                         **flag_values(options_class), **values)


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
