"""The native format: an object-based tf.train.Checkpoint whose root `model` holds `encoder`
(and the task heads, for task models) — the layout training checkpoints also use, so a
run_pretraining checkpoint can initialise a classifier."""

from typing import TYPE_CHECKING

import numpy as np
import tensorflow as tf

from bert_tf import kinds
from bert_tf.checkpoints.names import extract
from bert_tf.config import BertConfig

if TYPE_CHECKING:
    import keras


def checkpoint_root(model: "keras.Model") -> tf.Module:
    """The object to checkpoint under `model=`: task models as they are, a bare encoder wrapped
    so its variables sit under `model/encoder/` like a task model's."""
    if hasattr(model, "encoder"):
        return model
    root = tf.Module()
    root.encoder = model
    return root


def is_native_checkpoint(prefix: str) -> bool:
    """True for an object-based (tf.train.Checkpoint) checkpoint."""
    try:
        names = {n for n, _ in tf.train.list_variables(prefix)}
    except (tf.errors.NotFoundError, tf.errors.DataLossError, ValueError):
        return False
    return "_CHECKPOINTABLE_OBJECT_GRAPH" in names


def write_native(model: "keras.Model", prefix: str) -> str:
    """Writes `model` (under `model=`, see checkpoint_root) at `prefix`; returns the prefix."""
    return tf.train.Checkpoint(model=checkpoint_root(model)).write(prefix)


def _object_graph(prefix):
    """(reader, TrackableObjectGraph) of a native checkpoint."""
    from tensorflow.core.protobuf import trackable_object_graph_pb2
    reader = tf.train.load_checkpoint(prefix)
    graph = trackable_object_graph_pb2.TrackableObjectGraph()
    graph.ParseFromString(reader.get_tensor("_CHECKPOINTABLE_OBJECT_GRAPH"))
    return reader, graph


def _child(graph, node_id, *path):
    """The node id at `path` (attribute names) below node_id, or None."""
    for name in path:
        if node_id is None:
            return None
        node_id = next((c.node_id for c in graph.nodes[node_id].children
                        if c.local_name == name), None)
    return node_id


def native_head_kind(prefix: str) -> tuple[str | None, int | None]:
    """Which task model a native checkpoint holds (its bert_tf.kinds name: "pretraining",
    "classifier", "squad", "tagger", "multiple_choice"; None for a bare encoder) and the head's
    output size where it has one (the classifier's: a regression model's is 1).

    Read from the checkpoint's object graph, not its variable names: a variable reachable from
    several objects is saved once, under whichever path the saver met first (a training
    checkpoint may file the model's variables under optimizer/...)."""
    reader, graph = _object_graph(prefix)
    model = _child(graph, 0, "model")
    layers = {}                  # head layer -> the first kind of model holding it
    for kind in kinds.KINDS.values():
        if kind.head_layer:
            layers.setdefault(kind.head_layer, kind.name)
    for attr, kind in layers.items():
        if kind == "pretraining":
            if _child(graph, model, attr) is not None:
                return kind, None
            continue
        kernel = _child(graph, model, attr, "dense", "_kernel")
        if kernel is not None:
            key = graph.nodes[kernel].attributes[0].checkpoint_key
            return kind, reader.get_variable_to_shape_map()[key][-1]
    return None, None


def native_vocab_rows(prefix: str) -> int | None:
    """Rows of the checkpoint's word-embedding matrix (its vocab_size), or None if absent."""
    reader, graph = _object_graph(prefix)
    node = _child(graph, _child(graph, 0, "model"), "encoder", "embeddings", "word_embeddings")
    if node is None or not graph.nodes[node].attributes:
        return None
    key = graph.nodes[node].attributes[0].checkpoint_key
    return reader.get_variable_to_shape_map()[key][0]


def read_native(prefix: str, config: BertConfig) -> dict[str, np.ndarray]:
    """{google name: array} from a native checkpoint, by restoring into a model of `config`
    with the heads the checkpoint holds. Raises if the checkpoint lacks encoder variables.
    The model takes the checkpoint's own vocab_size, so a config whose vocabulary has grown
    since (build_vocab.py --extend) reads it too; load_weights then adds the new rows."""
    from bert_tf.model import BertEncoder
    rows = native_vocab_rows(prefix)
    if rows is not None and rows != config.vocab_size:
        config = config.replace(vocab_size=int(rows))
    kind, units = native_head_kind(prefix)
    encoder = BertEncoder(config)
    if kind is None:
        model = encoder
    elif kind in ("classifier", "tagger"):
        model = kinds.get(kind).load("model")(encoder, num_classes=units)
    else:
        model = kinds.get(kind).load("model")(encoder)
    status = tf.train.Checkpoint(model=checkpoint_root(model)).read(prefix)
    status.expect_partial()            # optimizer slots and step counters are not ours
    try:
        status.assert_existing_objects_matched()
    except AssertionError as e:
        raise ValueError(f"{prefix}: native checkpoint does not hold every variable of a "
                         f"BERT with this config: {e}") from None
    return extract(model)
