"""Activation smoothing for LiteRT int8 exports, whose runtimes quantize activations at run time
with one scale per token (dynamic range).

A few input channels of a Dense layer that run far larger than the rest take the int8 range,
and the other channels lose their precision. SmoothQuant (Xiao et al., 2022) divides input
channel j by s_j = max|x_j|^alpha / max_k |W_jk|^(1 - alpha) (x from calibration text) and
multiplies kernel row j by s_j: the same function in float, with the outliers moved into the
weights, which are quantized per output channel. The converters fold a constant multiply in
front of a FULLY_CONNECTED back into its weights, so the division goes where it costs nothing
at run time, in an export copy of the encoder (its weights are rewritten):

  query/key/value   into the LayerNorm before the block (the embeddings' or the previous
                    block's output LayerNorm); the block multiplies its residual input back
                    (TransformerBlock.input_scale)
  attention output  into the value projection's output columns (attention is linear in them)
  intermediate      into the block's attention LayerNorm; the block multiplies the
                    feed-forward residual back (TransformerBlock.attention_scale)

The feed-forward output projection, after the GELU, is left as it is. The last block's output,
hence sequence_output and pooled_output, are unchanged; encoder_outputs before the last and
embedding_output come out divided by the next block's s (serving heads read neither).
"""

import contextlib

import numpy as np


@contextlib.contextmanager
def _recording(layers, ranges):
    """While active, each Dense in `layers` records max |input| per channel into ranges[path]."""
    originals = {layer: layer.call for layer in layers}

    def recorder(layer):
        def call(x, *args, **kwargs):
            seen = np.abs(np.asarray(x)).reshape(-1, x.shape[-1]).max(axis=0)
            ranges[layer.path] = np.maximum(ranges.get(layer.path, 0.0), seen)
            return originals[layer](x, *args, **kwargs)
        return call

    for layer in layers:
        layer.call = recorder(layer)
    try:
        yield
    finally:
        for layer, call in originals.items():
            layer.call = call


def _smoothed_layers(block):
    attention = block.attention
    return [attention.query, attention.key, attention.value, block.attention_output,
            block.intermediate]


def input_ranges(encoder, features):
    """{Dense layer path: max |input| per channel [in]} of the blocks' smoothed layers, over
    `features` (dicts of int32 input_ids, input_mask, segment_ids), run eagerly."""
    layers = [layer for block in encoder.blocks for layer in _smoothed_layers(block)]
    ranges = {}
    with _recording(layers, ranges):
        for batch in features:
            encoder(batch, training=False)
    missing = [layer.path for layer in layers if layer.path not in ranges]
    if missing:
        raise ValueError(f"calibration ran no input through {missing[0]}: no features given?")
    return ranges


def _factors(act, kernels, alpha):
    """s [in] for inputs of max |x| `act` [in] into `kernels` ([in, out] each)."""
    weight = np.max([np.abs(k).max(axis=1) for k in kernels], axis=0)
    s = np.maximum(act, 1e-5) ** alpha / np.maximum(weight, 1e-5) ** (1.0 - alpha)
    return (s / np.exp(np.log(s).mean())).astype(np.float32)   # geometric mean 1


def _divide_layer_norm(layer_norm, s):
    layer_norm.gamma.assign(layer_norm.gamma.numpy() / s)
    layer_norm.beta.assign(layer_norm.beta.numpy() / s)


def _scale_rows(dense, s):
    dense.kernel.assign(dense.kernel.numpy() * s[:, None])


def smooth(encoder, features, alpha):
    """Rewrites a float32 BertEncoder's weights in place (see the module docstring), with the
    input ranges seen on `features` (input_ranges) and SmoothQuant's `alpha` (0.5: the
    quantization difficulty split evenly between activations and weights); returns it."""
    ranges = input_ranges(encoder, features)
    blocks = encoder.blocks
    for i, block in enumerate(blocks):
        attention = block.attention
        qkv = (attention.query, attention.key, attention.value)
        s = _factors(ranges[attention.query.path], [d.kernel.numpy() for d in qkv], alpha)
        before = encoder.embeddings.layer_norm if i == 0 else blocks[i - 1].output_layer_norm
        _divide_layer_norm(before, s)
        for dense in qkv:
            _scale_rows(dense, s)
        block.input_scale = s

        s = _factors(ranges[block.attention_output.path], [block.attention_output.kernel.numpy()],
                     alpha)
        attention.value.kernel.assign(attention.value.kernel.numpy() / s)
        attention.value.bias.assign(attention.value.bias.numpy() / s)
        _scale_rows(block.attention_output, s)

        s = _factors(ranges[block.intermediate.path], [block.intermediate.kernel.numpy()], alpha)
        _divide_layer_norm(block.attention_layer_norm, s)
        _scale_rows(block.intermediate, s)
        block.attention_scale = s
    return encoder

