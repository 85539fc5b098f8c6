"""Op types a signature of a SavedModel runs, read from saved_model.pb alone.

Imports only TensorFlow (no tensorflow_text, no Keras), so it can check which ops a model
server must know from a process that has registered nothing else.
"""

import os

import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2


def read_saved_model(export_dir):
    proto = saved_model_pb2.SavedModel()
    with tf.io.gfile.GFile(os.path.join(export_dir, "saved_model.pb"), "rb") as f:
        proto.ParseFromString(f.read())
    return proto


def _meta_graph(proto, tag):
    for meta_graph in proto.meta_graphs:
        if tag in meta_graph.meta_info_def.tags:
            return meta_graph
    raise ValueError(f"no MetaGraph tagged {tag!r}")


def _called_functions(node, functions):
    """Library functions a node calls: through function-valued attributes (PartitionedCall,
    If, While, ...) or by using a function's name as its op."""
    called = [node.op] if node.op in functions else []
    for value in node.attr.values():
        if value.HasField("func"):
            called.append(value.func.name)
        called.extend(f.name for f in value.list.func)
    return called


def signature_op_types(export_dir, signature_name, tag="serve"):
    """The op types reachable from the outputs of `signature_name`: the main-graph nodes its
    outputs depend on and every node of the functions they call, transitively."""
    meta_graph = _meta_graph(read_saved_model(export_dir), tag)
    if signature_name not in meta_graph.signature_def:
        raise KeyError(f"{export_dir}: no signature {signature_name!r} "
                       f"(has {sorted(meta_graph.signature_def)})")
    graph = meta_graph.graph_def
    nodes = {node.name: node for node in graph.node}
    functions = {f.signature.name: f for f in graph.library.function}
    signature = meta_graph.signature_def[signature_name]
    pending = [t.name.split(":")[0] for t in signature.outputs.values()]
    seen_nodes, seen_functions, op_types = set(), set(), set()
    pending_functions = []
    while pending:
        name = pending.pop()
        if name in seen_nodes:
            continue
        seen_nodes.add(name)
        node = nodes[name]
        op_types.add(node.op)
        pending.extend(i.lstrip("^").split(":")[0] for i in node.input)
        pending_functions.extend(_called_functions(node, functions))
    while pending_functions:
        name = pending_functions.pop()
        if name in seen_functions:
            continue
        seen_functions.add(name)
        for node in functions[name].node_def:
            if node.op not in functions:
                op_types.add(node.op)
            pending_functions.extend(_called_functions(node, functions))
    return op_types

