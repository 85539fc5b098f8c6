"""same_package_pairs.py TASK_DIR OUT_DIR SEED: the quickstart's labelled sentences (TASK_DIR's
train/dev/test.tsv: sentence, package) turned into a sentence-pair task: are the two sentences
from the same package? Each sentence is paired twice within its split, once with a sentence of
its own package and once with one of another, so the labels are balanced and no pair crosses
splits. A probe of whether the pre-training's next-sentence objective (same document or not)
transfers, as the paper's pair tasks do."""
import csv
import os
import random
import sys


def pairs(rows, rng):
    by_package = {}
    for sentence, package in rows:
        by_package.setdefault(package, []).append(sentence)
    out = []
    for sentence, package in rows:
        same = [s for s in by_package[package] if s != sentence]
        other = [s for p, group in by_package.items() if p != package for s in group]
        out.append((sentence, rng.choice(same), "same"))
        out.append((sentence, rng.choice(other), "different"))
    rng.shuffle(out)
    return out


def main(task_dir, out_dir, seed):
    rng = random.Random(int(seed))
    os.makedirs(out_dir, exist_ok=True)
    for split in ("train", "dev", "test"):
        with open(os.path.join(task_dir, f"{split}.tsv"), encoding="utf-8") as f:
            rows = [(r["sentence"], r["package"]) for r in csv.DictReader(f, delimiter="\t")]
        with open(os.path.join(out_dir, f"{split}.tsv"), "w", encoding="utf-8", newline="") as f:
            writer = csv.writer(f, delimiter="\t", quoting=csv.QUOTE_MINIMAL)
            writer.writerow(["sentence_a", "sentence_b", "same"])
            writer.writerows(pairs(rows, rng))
        print(f"{out_dir}/{split}.tsv: {2 * len(rows)} pairs")


if __name__ == "__main__":
    main(*sys.argv[1:])
