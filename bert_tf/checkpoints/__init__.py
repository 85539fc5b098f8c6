"""Checkpoint conversion: google-research TF1, HuggingFace safetensors and native
tf.train.Checkpoint, all through google-research's variable names (see names.py)."""

import logging
import os
from typing import TYPE_CHECKING

from bert_tf.checkpoints.formats import find_config, read_any, resolve
from bert_tf.checkpoints.hf import write_hf
from bert_tf.checkpoints.layer_subset import select_layers
from bert_tf.checkpoints.names import extract, model_variables
from bert_tf.checkpoints.native import write_native
from bert_tf.checkpoints.report import CheckpointError, LoadReport, assign
from bert_tf.checkpoints.tf1 import read_tf1, write_tf1
from bert_tf.config import BertConfig

if TYPE_CHECKING:
    import keras

    from bert_tf.model import BertEncoder

logger = logging.getLogger(__name__)

TF1_PREFIX_NAME = "bert_model.ckpt"
NATIVE_PREFIX_NAME = "ckpt"


def _task_of(model):
    from bert_tf.model import task_models as tm
    if isinstance(model, tm.BertTokenClassifier):
        return "tagger"
    if isinstance(model, tm.BertMultipleChoice):
        return "multiple_choice"
    return "classifier"


def load_weights(model: "keras.Model", path: str | os.PathLike,
                 require_heads: bool = False, layers: list[int] | None = None) -> LoadReport:
    """Loads a checkpoint of any format into an encoder or task model; returns a LoadReport.

    Encoder weights must all be present and fit; heads absent from the checkpoint stay freshly
    initialised (listed in report.missing) unless require_heads.

    Args:
      model: a BertEncoder or a task model (BertClassifier, ...), already built.
      path: a TF1 prefix (.../bert_model.ckpt), a HuggingFace folder or model.safetensors, or a
        native checkpoint prefix or folder (a runner's output_dir; its latest checkpoint).
      require_heads: raise CheckpointError when the checkpoint lacks a head variable too.
      layers: the checkpoint's encoder layers that become the model's, in order (a student
        with fewer layers, layer_subset.select_layers); default: layer i is layer i.
    """
    config = model_config(model)
    if layers is not None and config is not None:     # a native checkpoint: read those layers
        config = config.replace(num_hidden_layers=max(layers) + 1)
    fmt, arrays, unmapped = read_any(path, config, _task_of(model))
    source = f"{path} ({fmt})"
    if layers is not None:
        arrays = select_layers(arrays, layers, source)
        source = f"{path} ({fmt}, encoder layers {','.join(map(str, layers))})"
    report = assign(model, arrays, source, require_heads=require_heads)
    report.unexpected.extend(unmapped)
    return report


def model_config(model: "keras.Model") -> BertConfig | None:
    return getattr(model, "config", None)


def load_encoder(path: str | os.PathLike, config: BertConfig | None = None) -> "BertEncoder":
    """A BertEncoder built from the config beside `path` (or `config`) with its weights loaded.

    Args:
      path: a TF1 prefix (e.g. .../bert_model.ckpt), a folder holding model.safetensors +
        config.json (HuggingFace), or a native checkpoint prefix/folder.
      config: the model's config; default: bert_config.json or config.json beside `path`.

    Returns:
      The encoder, with the LoadReport attached as `encoder.load_report`.
    """
    from bert_tf.model import BertEncoder
    if config is None:
        config = find_config(path)
    encoder = BertEncoder(config)
    encoder.load_report = load_weights(encoder, path)
    return encoder


def save_weights(model: "keras.Model", destination: str | os.PathLike, fmt: str,
                 vocab_file: str | None = None) -> str:
    """Writes `model` as fmt "tf1" (folder with bert_model.ckpt.* + bert_config.json), "hf"
    (model.safetensors + config.json) or "native" (ckpt-* + bert_config.json) into the folder
    `destination`, with a copy of `vocab_file` as vocab.txt when given. Returns the path a
    loader takes (prefix for tf1/native, folder for hf)."""
    config = model_config(model)
    os.makedirs(destination, exist_ok=True)
    if fmt == "tf1":
        result = write_tf1(extract(model), os.path.join(destination, TF1_PREFIX_NAME))
        config.to_json_file(os.path.join(destination, "bert_config.json"))
    elif fmt == "hf":
        result = write_hf(extract(model), destination, config)
    elif fmt == "native":
        result = write_native(model, os.path.join(destination, NATIVE_PREFIX_NAME))
        config.to_json_file(os.path.join(destination, "bert_config.json"))
    else:
        raise ValueError(f"unknown format {fmt!r}: use tf1, hf or native")
    if vocab_file:
        import shutil
        shutil.copyfile(vocab_file, os.path.join(destination, "vocab.txt"))
    return result


__all__ = ["CheckpointError", "LoadReport", "assign", "extract", "find_config", "load_encoder",
           "load_weights", "model_variables", "read_any", "read_tf1", "resolve", "save_weights",
           "write_hf", "write_native", "write_tf1"]
