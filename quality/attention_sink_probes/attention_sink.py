"""attention_sink.py RUN...: where the first block's heads look, on 8 task sentences.

For each pre-training output folder: the normalised entropy of the attention rows (1 = uniform),
the mean of each row's largest probability, and how much of [CLS]'s attention goes to itself and
to the final [SEP]. Computed in NumPy from the checkpoint's weights (embeddings, embedding
LayerNorm, layer_0 query/key), without dropout. One JSON line per run on stdout.
QUICKSTART=<a quickstart output folder> gives the vocabulary and the task sentences."""
import json
import os
import sys

import numpy as np

from bert_tf import BertConfig
from bert_tf.checkpoints import load_weights
from bert_tf.model import BertEncoder, BertPretrainer
from bert_tf.tokenization import FullTokenizer

QUICKSTART = os.environ.get("QUICKSTART", "/work/q54/qs/seed1-93627a99")


def layer_norm(x, weights, prefix, eps):
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weights[prefix + "/gamma"] + weights[prefix + "/beta"]


def sink_statistics(run, sentences, tokenizer):
    config = BertConfig.from_json_file(os.path.join(run, "bert_config.json"))
    model = BertPretrainer(BertEncoder(config))
    load_weights(model, run)
    w = {v.path: v.numpy() for v in model.weights}
    heads, entropy, top, cls_self, cls_sep = config.num_attention_heads, [], [], [], []
    for sentence in sentences:
        ids = tokenizer.convert_tokens_to_ids(
            ["[CLS]"] + tokenizer.tokenize(sentence)[:60] + ["[SEP]"])
        n = len(ids)
        x = (w["embeddings/word_embeddings"][ids] + w["embeddings/position_embeddings"][:n]
             + w["embeddings/token_type_embeddings"][0])
        x = layer_norm(x, w, "embeddings/layer_norm", config.layer_norm_eps)
        q = x @ w["layer_0/attention/query/kernel"] + w["layer_0/attention/query/bias"]
        k = x @ w["layer_0/attention/key/kernel"] + w["layer_0/attention/key/bias"]
        d = q.shape[-1] // heads
        for h in range(heads):
            scores = q[:, h * d:(h + 1) * d] @ k[:, h * d:(h + 1) * d].T / np.sqrt(d)
            p = np.exp(scores - scores.max(-1, keepdims=True))
            p /= p.sum(-1, keepdims=True)
            entropy.append(float(-(p * np.log(p)).sum(-1).mean() / np.log(n)))
            top.append(float(p.max(-1).mean()))
            cls_self.append(float(p[0, 0]))
            cls_sep.append(float(p[0, -1]))
    return {"run": run, "entropy": round(np.mean(entropy), 3), "max_prob": round(np.mean(top), 3),
            "cls_to_cls": round(np.mean(cls_self), 3), "cls_to_sep": round(np.mean(cls_sep), 3)}


def main(runs):
    import subprocess

    from bert_tf.cpu_features import cpu_flags, cpu_model
    flags = cpu_flags()
    where = {"commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                      text=True).stdout.strip(),
             "cpu": cpu_model(), "avx512_vnni": "avx512_vnni" in flags,
             "avx512_bf16": "avx512_bf16" in flags}
    tokenizer = FullTokenizer(os.path.join(QUICKSTART, "vocab.txt"), True)
    lines = open(os.path.join(QUICKSTART, "data", "task", "train.tsv")).read().splitlines()
    sentences = [line.split("\t")[0] for line in lines[1:9]]
    for run in runs:
        print(json.dumps({**sink_statistics(run, sentences, tokenizer), **where}))


if __name__ == "__main__":
    main(sys.argv[1:])
