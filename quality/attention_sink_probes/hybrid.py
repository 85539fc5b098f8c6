"""hybrid.py BASE_RUN DONOR_RUN OUT GROUP...: BASE_RUN's weights with the GROUPs' from DONOR_RUN.

Both are run_pretraining output folders of one bert_config.json; OUT is a native checkpoint that
run_classifier.py --init_checkpoint reads. Groups: word (word embeddings), emb_other (position,
segment, embedding LayerNorm), layers (every Transformer weight) or one part of them:
layers_qk (query and key kernels), layers_vffn (the other kernels), layers_bias, layers_ln;
pooler, mlm_head, nsp_head."""
import os
import shutil
import sys

from bert_tf import BertConfig
from bert_tf.checkpoints import load_weights, save_weights
from bert_tf.model import BertEncoder, BertPretrainer


def group(path):
    if "word_embeddings" in path:
        return "word"
    if path.startswith("embeddings"):
        return "emb_other"
    if path.startswith("layer_"):
        if "layer_norm" in path:
            return "layers_ln"
        if "kernel" not in path:
            return "layers_bias"
        return "layers_qk" if ("query" in path or "key" in path) else "layers_vffn"
    return path.split("/")[0]


def main(base_run, donor_run, out, *groups):
    config = BertConfig.from_json_file(os.path.join(base_run, "bert_config.json"))
    base, donor = (BertPretrainer(BertEncoder(config)) for _ in range(2))
    load_weights(base, base_run)
    load_weights(donor, donor_run)
    donor_weights = {w.path: w for w in donor.weights}
    taken = [w.path for w in base.weights
             if group(w.path) in groups or group(w.path).split("_")[0] in groups]
    for w in base.weights:
        if w.path in taken:
            w.assign(donor_weights[w.path].numpy())
    save_weights(base, out, "native")
    shutil.copyfile(os.path.join(base_run, "bert_config.json"), os.path.join(out, "bert_config.json"))
    print(f"{out}: {len(taken)} weights from {donor_run}, the rest from {base_run}")


if __name__ == "__main__":
    main(*sys.argv[1:])
