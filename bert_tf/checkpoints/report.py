"""Assigning canonical weights to a model, with a report of what was loaded.

Vocabulary growth: a model whose vocab_size is larger than the checkpoint's (a vocabulary
extended with `build_vocab.py --extend`, new tokens appended after the released ones) takes
the checkpoint's rows of the word embeddings and of the masked-LM output bias unchanged, and
starts every new row at the mean of the checkpoint's rows (see `grow_rows`). Any other shape
difference, and a checkpoint with more rows than the model, is an error.
"""

import dataclasses
import logging
from typing import TYPE_CHECKING, Mapping

import numpy as np

from bert_tf.checkpoints.names import POOLER, is_encoder_name, model_variables, unused_variables

if TYPE_CHECKING:
    import keras

logger = logging.getLogger(__name__)


class CheckpointError(ValueError):
    """A checkpoint does not fit the model; the message names the variable(s)."""


@dataclasses.dataclass
class LoadReport:
    """What a load did, by google variable name: `loaded` were assigned, `missing` are model
    variables left at their fresh initialisation, `absent_unused` variables the checkpoint
    lacks that the model never reads (names.unused_variables; also left as initialised),
    `unexpected` checkpoint variables the model has no place for, `mismatched` shapes that did
    not fit and `resized` vocabulary rows added (a grown vocabulary). str() gives the summary
    lines."""

    source: str
    loaded: list[str] = dataclasses.field(default_factory=list)
    missing: list[str] = dataclasses.field(default_factory=list)
    absent_unused: list[str] = dataclasses.field(default_factory=list)
    unexpected: list[str] = dataclasses.field(default_factory=list)
    # (name, ckpt shape, model shape)
    mismatched: list[tuple[str, tuple, tuple]] = dataclasses.field(default_factory=list)
    # (name, ckpt rows, model rows, how)
    resized: list[tuple[str, int, int, str]] = dataclasses.field(default_factory=list)

    def summary(self) -> str:
        """The report as log lines: what was loaded, left fresh, unused or resized."""
        lines = [f"loaded {len(self.loaded)} variables from {self.source}"]
        if self.missing:
            lines.append(f"freshly initialised (not in checkpoint): {', '.join(self.missing)}")
        if self.absent_unused:
            lines.append("not in checkpoint, unused by this model: "
                         f"{', '.join(self.absent_unused)}")
        if self.unexpected:
            lines.append(f"unused checkpoint variables: {', '.join(self.unexpected)}")
        for name, ckpt_rows, model_rows, how in self.resized:
            lines.append(resize_message(name, ckpt_rows, model_rows, how))
        for name, ckpt_shape, model_shape in self.mismatched:
            lines.append(f"shape mismatch: {name} checkpoint {ckpt_shape} vs model {model_shape}")
        return "\n".join(lines)

    def __str__(self):
        return self.summary()


# Variables with one row per vocabulary entry: a checkpoint may have fewer rows than the model.
VOCAB_ROWS = ("bert/embeddings/word_embeddings", "cls/predictions/output_bias")


def grow_rows(value, rows):
    """`value` ([V, ...]) with rows appended up to `rows`, each the mean of value's rows
    (computed in float64, stored in value's dtype); value's own rows are kept bit for bit.
    Returns (array, description of the new rows' initialisation)."""
    mean = value.astype(np.float64).mean(axis=0).astype(value.dtype)
    extra = np.broadcast_to(mean, (rows - value.shape[0],) + value.shape[1:])
    return np.concatenate([value, extra], axis=0), "the mean of the checkpoint's rows"


def resize_message(name, ckpt_rows, model_rows, how):
    short = name.rsplit("/", 1)[-1]
    return (f"{short}: {ckpt_rows} rows from the checkpoint, {model_rows - ckpt_rows} new rows "
            f"initialised to {how}")


def _fits_with_more_rows(value, shape):
    """A checkpoint vocabulary-row variable the model extends: fewer rows, same other dims."""
    return (value.ndim == len(shape) and value.ndim >= 1 and value.shape[0] < shape[0]
            and tuple(value.shape[1:]) == tuple(shape[1:]))


def _hint(name, ckpt_shape, model_shape):
    if name in VOCAB_ROWS and ckpt_shape[1:] == model_shape[1:] and ckpt_shape[0] > model_shape[0]:
        return (" (the checkpoint has more vocabulary rows than the model's vocab_size: a "
                "vocabulary can grow, not shrink; is the config the right one?)")
    return ""


def _missing_hint(names):
    if any(name in POOLER for name in names):
        return (" (the pooler, which this model reads: a HuggingFace BertForQuestionAnswering or "
                "BertForTokenClassification folder has none; load it into a span or token "
                "model)")
    return ""


def assign(model: "keras.Model", arrays: Mapping[str, np.ndarray], source: str,
           require_heads: bool = False) -> LoadReport:
    """Copies `arrays` ({google name: array in google layout}) into `model`.

    Encoder variables are required: a missing one, or any shape mismatch, raises
    CheckpointError naming it, except those the model never reads (names.unused_variables: the
    pooler of span, token and embedding models), left as initialised and reported in
    report.absent_unused. The one difference allowed: the VOCAB_ROWS variables may have
    fewer rows in the checkpoint than in the model (a grown vocabulary); the new rows are
    initialised by `grow_rows` and listed in report.resized. Missing head variables stay
    freshly initialised (reported) unless `require_heads`. Checkpoint variables the model has
    no place for are reported as unexpected. `source` names the checkpoint in the report
    and in errors.
    """
    targets, unused = model_variables(model), unused_variables(model)
    report = LoadReport(source=str(source))
    report.unexpected = [n for n in arrays if n not in targets]
    updates = []
    for name, (var, transposed) in targets.items():
        if name not in arrays:
            (report.absent_unused if name in unused else report.missing).append(name)
            continue
        value = np.asarray(arrays[name])
        if transposed:
            value = value.T
        if (name in VOCAB_ROWS and not transposed
                and _fits_with_more_rows(value, tuple(var.shape))):
            ckpt_rows = value.shape[0]
            value, how = grow_rows(value, var.shape[0])
            report.resized.append((name, ckpt_rows, int(var.shape[0]), how))
        if tuple(value.shape) != tuple(var.shape):
            ckpt_shape = tuple(np.asarray(arrays[name]).shape)
            model_shape = tuple(var.shape)[::-1] if transposed else tuple(var.shape)
            report.mismatched.append((name, ckpt_shape, model_shape))
            continue
        updates.append((var, value, name))
    if report.mismatched:
        details = "; ".join(f"{n}: checkpoint {c} vs model {m}{_hint(n, c, m)}"
                            for n, c, m in report.mismatched)
        raise CheckpointError(f"{source}: variables do not fit the model: {details}")
    required_missing = [n for n in report.missing if require_heads or is_encoder_name(n)]
    if required_missing:
        shown = ", ".join(required_missing[:10])
        more = f" (and {len(required_missing) - 10} more)" if len(required_missing) > 10 else ""
        raise CheckpointError(f"{source}: missing required variables: {shown}{more}"
                              f"{_missing_hint(required_missing)}")
    for var, value, name in updates:
        var.assign(value.astype(var.dtype, copy=False))
        report.loaded.append(name)
    logger.info("%s", report.summary())
    return report
