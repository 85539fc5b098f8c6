"""A smaller encoder initialised from some of a checkpoint's Transformer layers (a distilled
student, `--student_layers=0,2,4`): the chosen layers are renamed to the student's layer
numbers, in order; embeddings, pooler and heads are taken as they are."""

import re

from bert_tf.checkpoints.report import CheckpointError

_LAYER = re.compile(r"^bert/encoder/layer_(\d+)/")


def select_layers(arrays, layers, source):
    """`arrays` ({google name: array}) with encoder layer layers[j] as layer j and the other
    layers left out. CheckpointError naming `source` when it lacks one of `layers`."""
    held = sorted({int(m.group(1)) for name in arrays if (m := _LAYER.match(name))})
    absent = [i for i in layers if i not in held]
    if absent:
        raise CheckpointError(f"{source}: no encoder layer {', '.join(map(str, absent))} to "
                              f"initialise the student from (it has {len(held)} layers, "
                              f"0-{held[-1] if held else 0})")
    position = {layer: j for j, layer in enumerate(layers)}
    selected = {}
    for name, value in arrays.items():
        match = _LAYER.match(name)
        if match is None:
            selected[name] = value
        elif int(match.group(1)) in position:
            j = position[int(match.group(1))]
            selected[f"bert/encoder/layer_{j}/{name[match.end():]}"] = value
    return selected
