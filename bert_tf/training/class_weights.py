"""Per-class loss weights for imbalanced data (--class_weights=auto|w0,w1,...).

"auto" is the "balanced" rule: weight_k = N / (K * count_k), so each class contributes the same
total weight and a uniform dataset gets 1.0 everywhere. The weighted loss is
sum_i w[y_i] * loss_i / sum_i w[y_i], a weighted mean, so the learning rate keeps its meaning.
"""

import dataclasses
import logging

import numpy as np

from bert_tf.options import option

logger = logging.getLogger("bert_tf")


@dataclasses.dataclass(kw_only=True)
class ClassWeightOptions:
    class_weights: str = option(
        None, "Per-class loss weights for imbalanced data: 'auto' (N / (K * count of the class) "
        "on the training data) or one number per label in label order, e.g. 1,4.5.")

    def validate_class_weights(self):
        """Checks the weight list; says when the weights go unused (no --do_train)."""
        if self.class_weights and self.class_weights != "auto":
            parse_weight_list(self.class_weights)
        if self.class_weights and not self.do_train:
            logger.info("--class_weights weights the training loss: unused without --do_train")


def parse_weight_list(spec):
    """[float] of "w0,w1,..." (each > 0)."""
    try:
        weights = [float(w) for w in spec.split(",")]
    except ValueError:
        raise ValueError(f"--class_weights={spec!r}: expected 'auto' or comma-separated "
                         f"numbers, one per label") from None
    if any(not np.isfinite(w) or w <= 0 for w in weights):
        raise ValueError(f"--class_weights={spec!r}: every weight must be a number > 0")
    return weights


def resolve_class_weights(spec, labels, label_ids=None):
    """float32 [K] weights of `spec` for `labels`; None when spec is empty. "auto" counts the
    training `label_ids` (ints in [0, K)); a class absent from them is an error."""
    if not spec:
        return None
    num = len(labels)
    if spec == "auto":
        if label_ids is None:
            raise ValueError("--class_weights=auto counts the training labels: it needs "
                             "--do_train")
        counts = np.bincount(np.asarray(label_ids, np.int64).ravel(), minlength=num)[:num]
        absent = [labels[k] for k in range(num) if counts[k] == 0]
        if absent:
            raise ValueError(f"--class_weights=auto: labels {absent} never occur in the "
                             f"training data; give the weights by hand")
        return (counts.sum() / (num * counts)).astype(np.float32)
    weights = parse_weight_list(spec)
    if len(weights) != num:
        raise ValueError(f"--class_weights: {len(weights)} weights for {num} labels "
                         f"{list(labels)}")
    return np.asarray(weights, np.float32)


def describe(weights, labels):
    return ", ".join(f"{label}={w:.3g}" for label, w in zip(labels, weights))
