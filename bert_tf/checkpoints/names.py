"""The canonical weight names: google-research/bert's TF1 variable names and layouts.

Every checkpoint format converts to and from a dict {google name: numpy array in google layout}.
Layouts: dense kernels are [in, out] (as in Keras); the head matrices google-research stores as
`output_weights` are [out, in], so they are the transpose of our Dense kernels.
Heads google-research never had use the same pattern under `cls/token_classifier/` and
`cls/multiple_choice/` (bert_tf names).
"""

import collections

# name -> (keras variable, transposed). transposed: google array == our variable's value.T
VariableMap = collections.OrderedDict


def _dense(prefix, layer, out):
    out[f"{prefix}/kernel"] = (layer.kernel, False)
    out[f"{prefix}/bias"] = (layer.bias, False)


def _layer_norm(prefix, layer, out):
    out[f"{prefix}/gamma"] = (layer.gamma, False)
    out[f"{prefix}/beta"] = (layer.beta, False)


def _output_layer(prefix, head, out):
    """A DenseHead stored google-style as output_weights [out, in] + output_bias."""
    out[f"{prefix}output_weights"] = (head.dense.kernel, True)
    out[f"{prefix}output_bias"] = (head.dense.bias, False)


def encoder_variables(encoder):
    out = VariableMap()
    emb = encoder.embeddings
    out["bert/embeddings/word_embeddings"] = (emb.word_embeddings, False)
    out["bert/embeddings/token_type_embeddings"] = (emb.token_type_embeddings, False)
    out["bert/embeddings/position_embeddings"] = (emb.position_embeddings, False)
    _layer_norm("bert/embeddings/LayerNorm", emb.layer_norm, out)
    for i, block in enumerate(encoder.blocks):
        p = f"bert/encoder/layer_{i}"
        _dense(f"{p}/attention/self/query", block.attention.query, out)
        _dense(f"{p}/attention/self/key", block.attention.key, out)
        _dense(f"{p}/attention/self/value", block.attention.value, out)
        _dense(f"{p}/attention/output/dense", block.attention_output, out)
        _layer_norm(f"{p}/attention/output/LayerNorm", block.attention_layer_norm, out)
        _dense(f"{p}/intermediate/dense", block.intermediate, out)
        _dense(f"{p}/output/dense", block.output_dense, out)
        _layer_norm(f"{p}/output/LayerNorm", block.output_layer_norm, out)
    _dense("bert/pooler/dense", encoder.pooler.dense, out)
    return out


def head_variables(model):
    """The task model's head variables by google name (empty for a bare encoder)."""
    from bert_tf.model import task_models as tm
    out = VariableMap()
    if isinstance(model, tm.BertPretrainer):
        _dense("cls/predictions/transform/dense", model.mlm_head.transform, out)
        _layer_norm("cls/predictions/transform/LayerNorm", model.mlm_head.layer_norm, out)
        out["cls/predictions/output_bias"] = (model.mlm_head.output_bias, False)
        _output_layer("cls/seq_relationship/", model.nsp_head, out)
    elif isinstance(model, tm.BertClassifier):
        _output_layer("", model.classifier, out)          # run_classifier's root-scope names
    elif isinstance(model, tm.BertSpanLabeler):
        _output_layer("cls/squad/", model.span_head, out)
    elif isinstance(model, tm.BertTokenClassifier):
        _output_layer("cls/token_classifier/", model.tagger, out)
    elif isinstance(model, tm.BertMultipleChoice):
        _output_layer("cls/multiple_choice/", model.scorer, out)
    return out


def model_variables(model):
    """All variables of an encoder or task model, keyed by google name, in a stable order."""
    encoder = getattr(model, "encoder", model)
    out = encoder_variables(encoder)
    out.update(head_variables(model))
    return out


POOLER = ("bert/pooler/dense/kernel", "bert/pooler/dense/bias")


def unused_variables(model):
    """Google names of the model's variables its outputs never read: the encoder's pooler in
    the span, token and embedding models, whose heads read the sequence output. A checkpoint
    may lack them (transformers saves BertForQuestionAnswering and BertForTokenClassification
    without `bert.pooler.*`)."""
    from bert_tf.model import task_models as tm
    if isinstance(model, (tm.BertSpanLabeler, tm.BertTokenClassifier, tm.BertEmbedder)):
        return POOLER
    return ()


def is_encoder_name(name):
    return name.startswith("bert/")


def is_training_state(name):
    """Optimizer slots and step counters found in google-research training checkpoints."""
    last = name.rsplit("/", 1)[-1]
    return (name in ("global_step", "good_steps", "loss_scale")
            or last in ("adam_m", "adam_v", "Momentum", "Adam", "Adam_1", "m", "v")
            or name.startswith(("beta1_power", "beta2_power")))


def extract(model):
    """{google name: numpy array in google layout} for the model's current weights."""
    arrays = collections.OrderedDict()
    for name, (var, transposed) in model_variables(model).items():
        value = var.numpy()
        arrays[name] = value.T if transposed else value
    return arrays
