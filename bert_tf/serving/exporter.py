"""export(): a task model -> `<export_dir>/<version>/` as TensorFlow Serving loads it.

The version is written to a hidden staging folder inside export_dir (TF Serving only looks at
numeric names) and renamed into place when complete, so a server polling export_dir never
sees a half-written version and a failed export leaves nothing behind.
"""

import contextlib
import json
import logging
import os
import shutil
import tempfile
import time

import tensorflow as tf

from bert_tf import fileio
from bert_tf.serving import names
from bert_tf.serving.module import ServingModule
from bert_tf.serving.tasks import make_task
from bert_tf.serving.warmup import warmup_requests, write_warmup
from bert_tf.tokenization import vocab as _vocab

logger = logging.getLogger("bert_tf")

EXPORT_INFO = "export_info.json"


def existing_versions(export_dir):
    """Numeric version folders already in export_dir, ascending."""
    if not os.path.isdir(export_dir):
        return []
    return sorted(int(n) for n in os.listdir(export_dir)
                  if n.isdigit() and os.path.isdir(os.path.join(export_dir, n)))


def next_version(export_dir):
    """1 for a new export_dir, else one more than its highest numeric version."""
    versions = existing_versions(export_dir)
    return versions[-1] + 1 if versions else 1


@contextlib.contextmanager
def _staging(export_dir, version):
    """Yields a hidden folder in export_dir; renamed to export_dir/<version> on success."""
    final = os.path.join(export_dir, str(version))
    os.makedirs(export_dir, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=f".tmp-export-{version}-", dir=export_dir)
    try:
        yield staging
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(staging, 0o777 & ~umask)                # mkdtemp makes 0700
        os.rename(staging, final)            # fails if a non-empty `final` appeared meanwhile
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def export(model, task, export_dir, vocab_file, do_lower_case, seq_length, labels=None, *,
           text_pair=False, max_query_length=64, max_answer_length=30, num_choices=None,
           top_k=5, include_special_tokens=False, version=None, warmup=True,
           text_signatures=True):
    """Exports `model` for TensorFlow Serving; returns the path of the new version folder.

    Args:
      model: BertClassifier (task "classifier", or "regression" when num_classes == 1),
        BertSpanLabeler ("squad"), BertTokenClassifier ("tagger"), BertMultipleChoice
        ("multiple_choice"), BertPretrainer with its masked-LM head ("fill_mask"), or
        BertEncoder / any task model ("encoder": its encoder). Mixed-precision models export
        float32 outputs.
      task: "classifier", "regression", "squad", "tagger", "encoder", "multiple_choice" or
        "fill_mask".
      export_dir: local folder holding numeric versions (TF Serving's --model_base_path).
      vocab_file, do_lower_case: the model's WordPiece vocabulary and casing; the vocabulary
        is copied to assets/vocab.txt.
      seq_length: max_seq_length of the raw-text and serve_examples signatures (longer texts
        are truncated as run_classifier / run_squad truncate them).
      labels: the label strings, in class-id order (classifier, tagger; required there).
      text_pair: serving_default takes text_a and text_b (classifier, regression, encoder).
      max_query_length, max_answer_length: run_squad's limits (squad).
      num_choices: endings per request row (multiple_choice, required there; 4 for SWAG).
      top_k, include_special_tokens: predictions per [MASK], and whether special tokens may be
        among them (fill_mask, as predict_masked.py's flags).
      version: the version number (default: the next free one).
      warmup: write assets.extra/tf_serving_warmup_requests (needs tensorflow-serving-api).
      text_signatures: include serving_default (raw text, needs the two tensorflow-text ops of
        bert_tf.tokenization.serving_ops); False exports core-TensorFlow-only signatures.
    """
    if fileio.is_url(export_dir):
        raise ValueError(f"{export_dir}: export to a local folder (a version is renamed into "
                         "place atomically, which object stores cannot do), then copy it")
    export_dir = os.path.abspath(os.fspath(export_dir))
    config = getattr(model, "config", None)
    if config is None:
        raise ValueError(f"cannot export {type(model).__name__}: not a bert_tf model")
    if not 2 <= seq_length <= config.max_position_embeddings:
        raise ValueError(f"seq_length={seq_length} must be in [2, max_position_embeddings = "
                         f"{config.max_position_embeddings}]")
    vocab = _vocab.Vocabulary.from_file(vocab_file)
    if len(vocab) > config.vocab_size:
        raise ValueError(f"{vocab_file}: {len(vocab)} tokens, more than the model's vocab_size "
                         f"({config.vocab_size}): wrong vocabulary for this model")
    if version is None:
        version = next_version(export_dir)
    elif isinstance(version, bool) or not isinstance(version, int) or version < 0:
        raise ValueError(f"version must be a non-negative integer, got {version!r}")
    if os.path.exists(os.path.join(export_dir, str(version))):
        raise FileExistsError(f"{export_dir}/{version} already exists: versions are never "
                              "overwritten (leave version=None for the next free number)")

    started = time.time()
    serving_task = make_task(task, model, vocab.id_to_token, do_lower_case, seq_length,
                             labels=labels, text_pair=text_pair,
                             max_query_length=max_query_length,
                             max_answer_length=max_answer_length, num_choices=num_choices,
                             top_k=top_k, include_special_tokens=include_special_tokens)
    module = ServingModule(serving_task, config)
    signatures = module.signatures(text=text_signatures)
    logger.info("exporting %s model (seq_length %d, signatures %s) to %s/%d", task, seq_length,
                ", ".join(sorted(signatures)), export_dir, version)
    with _staging(export_dir, version) as staging:
        tf.saved_model.save(module, staging, signatures=signatures)
        vocab_asset = os.path.join(staging, "assets", names.VOCAB_ASSET)
        if not os.path.exists(vocab_asset):
            raise RuntimeError(f"export is missing assets/{names.VOCAB_ASSET}")
        extra = os.path.join(staging, names.ASSETS_EXTRA)
        if warmup:
            count = write_warmup(os.path.join(extra, names.WARMUP_FILE),
                                 warmup_requests(serving_task, text=text_signatures))
            logger.info("wrote %d warm-up requests", count)
        info = dict(serving_task.info(), signatures=sorted(signatures),
                    do_lower_case=bool(do_lower_case), tensorflow=tf.__version__)
        os.makedirs(extra, exist_ok=True)
        fileio.atomic_write_text(os.path.join(extra, EXPORT_INFO),
                                 json.dumps(info, indent=2) + "\n")
    path = os.path.join(export_dir, str(version))
    logger.info("exported %s in %.1fs", path, time.time() - started)
    return path
