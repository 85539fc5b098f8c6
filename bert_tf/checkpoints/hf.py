"""HuggingFace BERT checkpoints (`model.safetensors` + `config.json`), read and written with
safetensors' numpy API: no PyTorch needed."""

import collections
import json
import os
import re
from typing import Mapping

import numpy as np
from safetensors.numpy import load_file, save_file

from bert_tf.config import BertConfig
from bert_tf.fileio import atomic_path, atomic_write_text

WEIGHTS_FILE = "model.safetensors"

# (google template, HF template without the optional "bert." prefix, transpose). transpose: HF
# nn.Linear weights are [out, in], google kernels [in, out]; google's head `output_weights` are
# already [out, in]. Placeholders: {i} a layer number, {qkv}/{sub} a sub-module name.
_RULES = [
    ("bert/embeddings/word_embeddings", "embeddings.word_embeddings.weight", False),
    ("bert/embeddings/token_type_embeddings", "embeddings.token_type_embeddings.weight", False),
    ("bert/embeddings/position_embeddings", "embeddings.position_embeddings.weight", False),
    ("bert/embeddings/LayerNorm/gamma", "embeddings.LayerNorm.weight", False),
    ("bert/embeddings/LayerNorm/beta", "embeddings.LayerNorm.bias", False),
    ("bert/encoder/layer_{i}/attention/self/{qkv}/kernel",
     "encoder.layer.{i}.attention.self.{qkv}.weight", True),
    ("bert/encoder/layer_{i}/attention/self/{qkv}/bias",
     "encoder.layer.{i}.attention.self.{qkv}.bias", False),
    ("bert/encoder/layer_{i}/{sub}/dense/kernel", "encoder.layer.{i}.{sub}.dense.weight", True),
    ("bert/encoder/layer_{i}/{sub}/dense/bias", "encoder.layer.{i}.{sub}.dense.bias", False),
    ("bert/encoder/layer_{i}/{sub}/LayerNorm/gamma", "encoder.layer.{i}.{sub}.LayerNorm.weight",
     False),
    ("bert/encoder/layer_{i}/{sub}/LayerNorm/beta", "encoder.layer.{i}.{sub}.LayerNorm.bias",
     False),
    ("bert/pooler/dense/kernel", "pooler.dense.weight", True),
    ("bert/pooler/dense/bias", "pooler.dense.bias", False),
    ("cls/predictions/transform/dense/kernel", "cls.predictions.transform.dense.weight", True),
    ("cls/predictions/transform/dense/bias", "cls.predictions.transform.dense.bias", False),
    ("cls/predictions/transform/LayerNorm/gamma", "cls.predictions.transform.LayerNorm.weight",
     False),
    ("cls/predictions/transform/LayerNorm/beta", "cls.predictions.transform.LayerNorm.bias",
     False),
    ("cls/predictions/output_bias", "cls.predictions.bias", False),
    ("cls/seq_relationship/output_weights", "cls.seq_relationship.weight", False),
    ("cls/seq_relationship/output_bias", "cls.seq_relationship.bias", False),
    ("cls/squad/output_weights", "qa_outputs.weight", False),
    ("cls/squad/output_bias", "qa_outputs.bias", False),
]
# HF's `classifier.*` serves three task models; which google name it means depends on the task.
_CLASSIFIER_PREFIX = {"classifier": "", "tagger": "cls/token_classifier/",
                      "multiple_choice": "cls/multiple_choice/"}
_SLOTS = {"i": r"\d+", "qkv": "query|key|value",
          "sub": r"attention[./]output|intermediate|output"}
# Present in HF files but carrying nothing of their own (a buffer, tied copies).
_SKIP = re.compile(r"(embeddings\.position_ids|cls\.predictions\.decoder\.(weight|bias))$")


def _pattern(template, sep):
    regex = re.escape(template)
    for slot, alternatives in _SLOTS.items():
        regex = regex.replace(re.escape("{%s}" % slot), f"(?P<{slot}>{alternatives})")
    return re.compile(regex + "$"), sep


def _convert(name, source_index, target_index):
    for rule in _RULES:
        pattern, sep = _pattern(rule[source_index], "." if source_index else "/")
        m = pattern.match(name)
        if m:
            target_sep = "." if target_index else "/"
            slots = {k: v.replace(sep, target_sep) for k, v in m.groupdict().items()}
            return rule[target_index].format(**slots), rule[2]
    return None


def _legacy_layer_norm(name):
    """Old HF files name LayerNorm parameters gamma/beta."""
    return re.sub(r"LayerNorm\.gamma$", "LayerNorm.weight",
                  re.sub(r"LayerNorm\.beta$", "LayerNorm.bias", name))


def hf_to_google(name: str, classifier_task: str = "classifier") -> tuple[str, bool] | None:
    """(google name, transpose) for an HF tensor name, or None when it maps to nothing.
    `classifier_task` ("classifier", "tagger" or "multiple_choice") says which head HF's
    ambiguous `classifier.*` tensors belong to."""
    short = _legacy_layer_norm(name[len("bert."):] if name.startswith("bert.") else name)
    if short in ("classifier.weight", "classifier.bias"):
        suffix = "output_weights" if short.endswith("weight") else "output_bias"
        return _CLASSIFIER_PREFIX[classifier_task] + suffix, False
    return _convert(short, 1, 0)


def google_to_hf(name: str) -> tuple[str, bool]:
    """(HF name without prefix, transpose) for a google name."""
    for prefix in _CLASSIFIER_PREFIX.values():
        if name in (prefix + "output_weights", prefix + "output_bias"):
            return ("classifier.weight" if name.endswith("weights") else "classifier.bias"), False
    converted = _convert(name, 0, 1)
    if converted is None:
        raise KeyError(f"no HuggingFace name for {name}")
    return converted


def is_hf_folder(path: str) -> bool:
    return os.path.isdir(path) and os.path.exists(os.path.join(path, WEIGHTS_FILE))


def read_hf(path: str, classifier_task: str = "classifier"
            ) -> tuple[dict[str, np.ndarray], list[str]]:
    """Reads `model.safetensors` (a folder or the file itself) into google names and layouts.
    Returns (arrays, unmapped names); `classifier_task` as in hf_to_google."""
    file = os.path.join(path, WEIGHTS_FILE) if os.path.isdir(path) else path
    tensors = load_file(file)
    arrays, unmapped = collections.OrderedDict(), []
    for name in sorted(tensors):
        if _SKIP.search(name):
            continue
        mapped = hf_to_google(name, classifier_task)
        if mapped is None:
            unmapped.append(name)
            continue
        google_name, transpose = mapped
        value = tensors[name]
        arrays[google_name] = np.ascontiguousarray(value.T) if transpose else value
    return arrays, unmapped


_ARCHITECTURES = {"classifier": "BertForSequenceClassification",
                  "tagger": "BertForTokenClassification",
                  "multiple_choice": "BertForMultipleChoice"}


def hf_architecture(arrays: Mapping[str, np.ndarray]) -> tuple[str, int | None]:
    """(the transformers class whose layout the heads in `arrays` (google names) are, number
    of labels for a sequence or token classifier, else None)."""
    if "cls/squad/output_weights" in arrays:
        return "BertForQuestionAnswering", None
    for task, prefix in _CLASSIFIER_PREFIX.items():
        if prefix + "output_weights" in arrays:
            units = int(arrays[prefix + "output_weights"].shape[0])
            return _ARCHITECTURES[task], None if task == "multiple_choice" else units
    if "cls/seq_relationship/output_weights" in arrays:
        return "BertForPreTraining", None
    if any(name.startswith("cls/predictions/") for name in arrays):
        return "BertForMaskedLM", None
    return "BertModel", None


def write_hf(arrays: Mapping[str, np.ndarray], folder: str, config: BertConfig) -> str:
    """Writes model.safetensors (+ config.json) in HF layout; `bert.` prefix when heads exist,
    as BertForPreTraining / BertForSequenceClassification / ... save it. config.json names
    that class in `architectures` and a classifier's label count as id2label, as transformers
    writes them, so bert_tf.predict (and a reader of the folder) can tell the head.
    `arrays`: {google name: array in google layout}. Returns `folder`."""
    has_heads = any(not n.startswith("bert/") for n in arrays)
    tensors = {}
    for name, value in arrays.items():
        hf_name, transpose = google_to_hf(name)
        if has_heads and not hf_name.startswith(("cls.", "classifier.", "qa_outputs.")):
            hf_name = "bert." + hf_name
        tensors[hf_name] = np.ascontiguousarray(value.T if transpose else value)
    os.makedirs(folder, exist_ok=True)
    with atomic_path(os.path.join(folder, WEIGHTS_FILE)) as tmp:
        save_file(tensors, tmp, metadata={"format": "pt"})
    values = config.to_hf_dict()
    architecture, num_labels = hf_architecture(arrays)
    values["architectures"] = [architecture]
    if num_labels:
        values["id2label"] = {str(i): f"LABEL_{i}" for i in range(num_labels)}
        values["label2id"] = {f"LABEL_{i}": i for i in range(num_labels)}
    atomic_write_text(os.path.join(folder, "config.json"),
                      json.dumps(values, indent=2) + "\n")
    return folder
