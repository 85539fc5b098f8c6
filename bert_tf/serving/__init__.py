"""SavedModel export for TensorFlow Serving: raw text in, answers out, for every task.

`export(model, kind, export_dir, vocab_file, do_lower_case, seq_length, head, settings)` writes
`<export_dir>/<version>/` (saved_model.pb, variables/, assets/vocab.txt,
assets.extra/tf_serving_warmup_requests) with the signatures `serving_default` (raw strings),
`serve_features` (int32 ids, core TensorFlow ops only) and `serve_examples` (serialized
tf.Example). Names load on first use, so `bert_tf.serving.graph_ops` can be used in a process
that never imports tensorflow_text.
"""

from bert_tf._lazy import lazy_exports

_EXPORTS = {
    "export": "bert_tf.serving.exporter",
    "next_version": "bert_tf.serving.exporter",
    "HeadOptions": "bert_tf.serving.options",
    "ExportSettings": "bert_tf.serving.options",
    "SERVING_DEFAULT": "bert_tf.names",
    "SERVE_FEATURES": "bert_tf.names",
    "SERVE_EXAMPLES": "bert_tf.names",
    "signature_op_types": "bert_tf.serving.graph_ops",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
