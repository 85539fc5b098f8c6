"""attention_sink.py RUN...: where the first block's heads look, on 8 task sentences.

For each pre-training output folder: the normalised entropy of the attention rows (1 = uniform),
the mean of each row's largest probability, and how much of [CLS]'s attention goes to itself and
to the final [SEP]. Computed with the model's own layers (embeddings, then the first block's
query/key heads and attention probabilities), without dropout. One JSON
line per run on stdout. QUICKSTART=<a quickstart output folder> gives the vocabulary and the
task sentences."""
import json
import os
import sys

import numpy as np

from bert_tf import BertConfig
from bert_tf.checkpoints import load_weights
from bert_tf.model import BertEncoder, BertPretrainer
from bert_tf.model.recompute import attention_probs
from bert_tf.tokenization import FullTokenizer

QUICKSTART = os.environ["QUICKSTART"]


def sink_statistics(run, sentences, tokenizer):
    config = BertConfig.from_json_file(os.path.join(run, "bert_config.json"))
    model = BertPretrainer(BertEncoder(config))
    load_weights(model, run)
    encoder, entropy, top, cls_self, cls_sep = model.encoder, [], [], [], []
    for sentence in sentences:
        ids = tokenizer.convert_tokens_to_ids(
            ["[CLS]"] + tokenizer.tokenize(sentence)[:60] + ["[SEP]"])
        n = len(ids)
        x = encoder.embeddings(np.array([ids]), np.zeros((1, n), np.int32))        # [1, S, H]
        q, k, _ = encoder.layer_0.attention.heads(x, None)                         # [1, N, S, D]
        probs = np.asarray(attention_probs(q, k, np.zeros((1, 1, 1, n), np.float32)))[0]
        for p in probs:                                                            # [S, S] a head
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
                                      text=True, cwd=os.path.dirname(os.path.abspath(__file__))
                                      ).stdout.strip(),
             "cpu": cpu_model(), "avx512_vnni": "avx512_vnni" in flags,
             "avx512_bf16": "avx512_bf16" in flags}
    tokenizer = FullTokenizer(os.path.join(QUICKSTART, "vocab.txt"), True)
    lines = open(os.path.join(QUICKSTART, "data", "task", "train.tsv")).read().splitlines()
    sentences = [line.split("\t")[0] for line in lines[1:9]]
    for run in runs:
        print(json.dumps({**sink_statistics(run, sentences, tokenizer), **where}))


if __name__ == "__main__":
    main(sys.argv[1:])
