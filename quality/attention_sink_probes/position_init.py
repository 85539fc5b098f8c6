"""position_init.py BERT_CONFIG OUT SEED: a freshly initialised BertPretrainer whose position
embeddings start as the Transformer paper's sin/cos table, saved as a native checkpoint for
run_pretraining.py --init_checkpoint.

The table is scaled to the config's initializer_range (the other embeddings' standard
deviation), so that attention by relative position is a linear function of the embeddings from
the first step."""
import os
import shutil
import sys

import keras
import numpy as np

from bert_tf import BertConfig
from bert_tf.checkpoints import save_weights
from bert_tf.model import BertEncoder, BertPretrainer


def sinusoid(positions, width):
    angle = np.arange(positions)[:, None] / np.power(10000.0, np.arange(0, width, 2) / width)
    table = np.zeros((positions, width), np.float32)
    table[:, 0::2], table[:, 1::2] = np.sin(angle), np.cos(angle)
    return table


def main(config_file, out, seed):
    config = BertConfig.from_json_file(config_file)
    keras.utils.set_random_seed(int(seed))
    model = BertPretrainer(BertEncoder(config))
    position = next(w for w in model.weights if w.path == "embeddings/position_embeddings")
    table = sinusoid(*position.shape)
    position.assign(table * (config.initializer_range / table.std()))
    save_weights(model, out, "native")
    shutil.copyfile(config_file, os.path.join(out, "bert_config.json"))
    print(f"{out}: sin/cos position embeddings, std {float(np.std(position.numpy())):.4f}")


if __name__ == "__main__":
    main(*sys.argv[1:])
