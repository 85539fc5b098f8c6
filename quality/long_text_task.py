#!/usr/bin/env python3
"""A long-text classification task built from real data: where is the opinion?

Each document is real encyclopedic prose (SQuAD paragraphs, neutral) with one real SST-2
movie-review sentence inserted at a random sentence boundary; the label is that sentence's
SST-2 label. Documents run to several hundred WordPieces, so a model that truncates to
max_seq_length sees the review sentence only when it lands early, while windows see it
wherever it is. Train: SST-2 train sentences + SQuAD train paragraphs; dev: SST-2 dev + SQuAD
dev paragraphs (other articles). Files are generic-task TSVs (text, label).

  python quality/long_text_task.py --out_dir OUT --num_train 2000
"""

import argparse
import csv
import json
import os
import random
import re

SHARED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared")
SQUAD_TRAIN = "data/squad/train-v1.1.first44articles.json"
SQUAD_DEV = "data/squad/dev-v1.1.half-a.json"
SST2 = "data/glue/SST-2/{split}.tsv"


def _paragraphs(path):
    with open(path, encoding="utf-8") as f:
        data = json.load(f)["data"]
    return [p["context"] for article in data for p in article["paragraphs"]]


def _reviews(path, min_words):
    """(sentence, label) rows of an SST-2 file with at least min_words words."""
    with open(path, encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    return [(text.strip(), label) for text, label in rows if len(text.split()) >= min_words]


def _sentences(text):
    return [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s]


def make_documents(reviews, paragraphs, num, rng, paragraphs_per_doc=2):
    """`num` (document, label) pairs: paragraphs_per_doc random paragraphs with the review
    inserted before a random sentence (or at the end)."""
    docs = []
    for text, label in rng.sample(reviews, min(num, len(reviews))):
        sentences = [s for p in rng.sample(paragraphs, paragraphs_per_doc) for s in _sentences(p)]
        position = rng.randint(0, len(sentences))
        doc = " ".join(sentences[:position] + [text] + sentences[position:])
        docs.append((" ".join(doc.split()), label))
    return docs


def write_tsv(path, rows):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f, delimiter="\t", quoting=csv.QUOTE_NONE, escapechar="\\",
                            lineterminator="\n")
        writer.writerow(["text", "label"])
        for text, label in rows:
            writer.writerow([text.replace("\t", " ").replace("\\", " "), label])
    os.replace(tmp, path)


def build(out_dir, shared=SHARED, num_train=2000, num_dev=872, seed=0, min_words=8,
          paragraphs_per_doc=2):
    """Writes out_dir/train.tsv and dev.tsv; returns their row counts."""
    rng = random.Random(seed)
    os.makedirs(out_dir, exist_ok=True)
    counts = {}
    for split, squad, count in (("train", SQUAD_TRAIN, num_train), ("dev", SQUAD_DEV, num_dev)):
        reviews = _reviews(os.path.join(shared, SST2.format(split=split)), min_words)
        docs = make_documents(reviews, _paragraphs(os.path.join(shared, squad)), count, rng,
                              paragraphs_per_doc)
        write_tsv(os.path.join(out_dir, f"{split}.tsv"), docs)
        counts[split] = len(docs)
    return counts


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out_dir", required=True)
    parser.add_argument("--shared", default=SHARED)
    parser.add_argument("--num_train", type=int, default=2000)
    parser.add_argument("--num_dev", type=int, default=872)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(build(args.out_dir, args.shared, args.num_train, args.num_dev, args.seed))


if __name__ == "__main__":
    main()
