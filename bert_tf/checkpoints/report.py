"""Assigning canonical weights to a model, with a report of what was loaded."""

import dataclasses
import logging

import numpy as np

from bert_tf.checkpoints.names import is_encoder_name, model_variables

logger = logging.getLogger(__name__)


class CheckpointError(ValueError):
    """A checkpoint does not fit the model; the message names the variable(s)."""


@dataclasses.dataclass
class LoadReport:
    """What a load did. `missing` are model variables left at their fresh initialisation."""

    source: str
    loaded: list = dataclasses.field(default_factory=list)
    missing: list = dataclasses.field(default_factory=list)
    unexpected: list = dataclasses.field(default_factory=list)
    mismatched: list = dataclasses.field(default_factory=list)   # (name, ckpt shape, model shape)

    def summary(self):
        lines = [f"loaded {len(self.loaded)} variables from {self.source}"]
        if self.missing:
            lines.append(f"freshly initialised (not in checkpoint): {', '.join(self.missing)}")
        if self.unexpected:
            lines.append(f"unused checkpoint variables: {', '.join(self.unexpected)}")
        for name, ckpt_shape, model_shape in self.mismatched:
            lines.append(f"shape mismatch: {name} checkpoint {ckpt_shape} vs model {model_shape}")
        return "\n".join(lines)

    def __str__(self):
        return self.summary()


def assign(model, arrays, source, require_heads=False):
    """Copies `arrays` ({google name: array in google layout}) into `model`.

    Encoder variables are required: a missing one, or any shape mismatch, raises
    CheckpointError naming it. Missing head variables stay freshly initialised (reported) unless
    `require_heads`. Checkpoint variables the model has no place for are reported as unexpected.
    """
    targets = model_variables(model)
    report = LoadReport(source=str(source))
    report.unexpected = [n for n in arrays if n not in targets]
    updates = []
    for name, (var, transposed) in targets.items():
        if name not in arrays:
            report.missing.append(name)
            continue
        value = np.asarray(arrays[name])
        if transposed:
            value = value.T
        if tuple(value.shape) != tuple(var.shape):
            ckpt_shape = tuple(np.asarray(arrays[name]).shape)
            model_shape = tuple(var.shape)[::-1] if transposed else tuple(var.shape)
            report.mismatched.append((name, ckpt_shape, model_shape))
            continue
        updates.append((var, value, name))
    if report.mismatched:
        details = "; ".join(f"{n}: checkpoint {c} vs model {m}" for n, c, m in report.mismatched)
        raise CheckpointError(f"{source}: variables do not fit the model: {details}")
    required_missing = [n for n in report.missing if require_heads or is_encoder_name(n)]
    if required_missing:
        shown = ", ".join(required_missing[:10])
        more = f" (and {len(required_missing) - 10} more)" if len(required_missing) > 10 else ""
        raise CheckpointError(f"{source}: missing required variables: {shown}{more}")
    for var, value, name in updates:
        var.assign(value.astype(var.dtype, copy=False))
        report.loaded.append(name)
    logger.info("%s", report.summary())
    return report
