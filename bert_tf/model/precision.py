"""A copy of a bert_tf model under another Keras dtype policy, holding the same weights (cast
to the policy's variable dtype): how a model trained in float32 is exported in bfloat16."""

from bert_tf.model.encoder import BertEncoder


def with_dtype_policy(model, policy, skip_padding=None, **encoder_options):
    """A new BertEncoder or task model like `model`, built with dtype policy `policy` (e.g.
    "bfloat16": bfloat16 variables and matmuls; Keras' LayerNorm and our softmax still compute
    in float32), with `model`'s weights copied in. `skip_padding` (None: as `model`'s) and
    `encoder_options` (flat_tokens, pooled_only; default off) set the copy's encoder options."""
    encoder = model if isinstance(model, BertEncoder) else model.encoder
    if skip_padding is None:
        skip_padding = encoder.skip_padding
    copy = BertEncoder(encoder.config, skip_padding=skip_padding, name=encoder.name,
                       dtype=policy, **encoder_options)
    if model is not encoder:
        config = dict(model.get_config(), encoder=copy)
        copy = type(model)(**config)
    source, target = model.weights, copy.weights
    if [tuple(w.shape) for w in source] != [tuple(w.shape) for w in target]:
        raise ValueError(f"cannot copy {type(model).__name__} to dtype policy {policy!r}: its "
                         f"weights ({len(source)}) do not line up with a rebuilt model's "
                         f"({len(target)})")
    for s, t in zip(source, target):
        t.assign(s)
    return copy
