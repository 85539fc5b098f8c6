"""Recognising checkpoint formats and their configs; reading any of them into google names."""

import os

import numpy as np

from bert_tf import fileio
from bert_tf.checkpoints.hf import is_hf_folder, read_hf
from bert_tf.checkpoints.native import is_native_checkpoint, read_native
from bert_tf.checkpoints.tf1 import is_tf1_checkpoint, read_tf1
from bert_tf.config import BertConfig

CONFIG_NAMES = ("bert_config.json", "config.json")


def _latest_prefix(folder):
    """A checkpoint prefix inside `folder`: the `checkpoint` state file's latest, else the single
    `*.index` file there."""
    import tensorflow as tf
    latest = tf.train.latest_checkpoint(folder)
    if latest:
        return latest
    indexes = sorted(tf.io.gfile.glob(os.path.join(folder, "*.index")))
    if len(indexes) == 1:
        return indexes[0][: -len(".index")]
    if len(indexes) > 1:
        raise ValueError(f"{folder}: several checkpoints ({', '.join(os.path.basename(i) for i in indexes)}) "
                         "and no `checkpoint` state file; pass the prefix you want")
    return None


def resolve(path: str | os.PathLike) -> tuple[str, str]:
    """(format, location): ("hf", folder), ("tf1", prefix) or ("native", prefix). TF1 and
    native checkpoints may be URLs (gs://...)."""
    path = os.fspath(path)
    if is_hf_folder(path):
        return "hf", path
    if path.endswith(".safetensors") and os.path.isfile(path):
        return "hf", path
    prefix = path
    if fileio.isdir(path):
        prefix = _latest_prefix(path)
        if prefix is None:
            raise FileNotFoundError(
                f"{path}: no checkpoint found (expected model.safetensors, a `checkpoint` state "
                "file, or a *.index file)")
    elif path.endswith(".index"):
        prefix = path[: -len(".index")]
    if not fileio.exists(prefix + ".index"):
        raise FileNotFoundError(f"{path}: no such checkpoint ({prefix}.index does not exist)")
    if is_native_checkpoint(prefix):
        return "native", prefix
    if is_tf1_checkpoint(prefix):
        return "tf1", prefix
    raise ValueError(f"{path}: not a readable TensorFlow checkpoint")


def find_config(path: str | os.PathLike) -> BertConfig:
    """The bert_config.json / config.json beside a checkpoint (folder or prefix)."""
    path = os.fspath(path)
    folder = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
    for name in CONFIG_NAMES:
        candidate = os.path.join(folder, name)
        if os.path.exists(candidate):
            return BertConfig.from_json_file(candidate)
    raise FileNotFoundError(f"no {' or '.join(CONFIG_NAMES)} next to {path}; pass config=")


def read_any(path: str | os.PathLike, config: BertConfig | None = None,
             classifier_task: str = "classifier"
             ) -> tuple[str, dict[str, np.ndarray], list[str]]:
    """(format, arrays in google names/layouts, unmapped names) for a checkpoint of any format.

    Args:
      path: as resolve() takes it.
      config: needed to read a native checkpoint (default: the config beside `path`).
      classifier_task: which head HF's `classifier.*` tensors are (see hf.hf_to_google).
    """
    fmt, location = resolve(path)
    if fmt == "hf":
        arrays, unmapped = read_hf(location, classifier_task)
        return fmt, arrays, unmapped
    if fmt == "tf1":
        return fmt, read_tf1(location), []
    return fmt, read_native(location, config or find_config(path)), []
