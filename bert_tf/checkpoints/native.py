"""The native format: an object-based tf.train.Checkpoint whose root `model` holds `encoder`
(and the task heads, for task models) — the layout training checkpoints also use, so a
run_pretraining checkpoint can initialise a classifier."""

import tensorflow as tf

from bert_tf.checkpoints.names import extract


def checkpoint_root(model):
    """The object to checkpoint under `model=`: task models as they are, a bare encoder wrapped
    so its variables sit under `model/encoder/` like a task model's."""
    if hasattr(model, "encoder"):
        return model
    root = tf.Module()
    root.encoder = model
    return root


def is_native_checkpoint(prefix):
    try:
        names = {n for n, _ in tf.train.list_variables(prefix)}
    except (tf.errors.NotFoundError, tf.errors.DataLossError, ValueError):
        return False
    return "_CHECKPOINTABLE_OBJECT_GRAPH" in names


def write_native(model, prefix):
    return tf.train.Checkpoint(model=checkpoint_root(model)).write(prefix)


def native_head_kind(prefix):
    """Which task model a native checkpoint holds ("pretraining", "classifier", ... or None for a
    bare encoder) and the head's output size where it has one."""
    shapes = dict(tf.train.list_variables(prefix))
    for kind, attr in (("pretraining", "mlm_head"), ("classifier", "classifier"),
                       ("span", "span_head"), ("tagger", "tagger"),
                       ("multiple_choice", "scorer")):
        kernel = f"model/{attr}/dense/_kernel/.ATTRIBUTES/VARIABLE_VALUE"
        if kind == "pretraining":
            if any(k.startswith("model/mlm_head/") for k in shapes):
                return kind, None
        elif kernel in shapes:
            return kind, shapes[kernel][-1]
    return None, None


def read_native(prefix, config):
    """{google name: array} from a native checkpoint, by restoring into a model of `config`
    with the heads the checkpoint holds. Raises if the checkpoint lacks encoder variables."""
    from bert_tf.model import BertEncoder
    from bert_tf.model.task_models import TASK_MODELS
    kind, units = native_head_kind(prefix)
    encoder = BertEncoder(config)
    if kind is None:
        model = encoder
    elif kind in ("classifier", "tagger"):
        model = TASK_MODELS[kind](encoder, num_classes=units)
    else:
        model = TASK_MODELS[kind](encoder)
    status = tf.train.Checkpoint(model=checkpoint_root(model)).read(prefix)
    status.expect_partial()            # optimizer slots and step counters are not ours
    try:
        status.assert_existing_objects_matched()
    except AssertionError as e:
        raise ValueError(f"{prefix}: native checkpoint does not hold every variable of a "
                         f"BERT with this config: {e}") from None
    return extract(model)
