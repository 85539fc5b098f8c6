"""A retrieval set derived from SQuAD v1.1 files: each question is a query whose one relevant
text is the paragraph it was asked about; the corpus is every paragraph of the file.

write_squad_retrieval writes, in file order (so the same inputs give the same bytes):
  train.jsonl        {"id", "anchor": question, "positive": paragraph} of the training file
  dev.jsonl          the same of the dev file (run_embedding --eval_file)
  dev_corpus.jsonl   {"id", "text"} of every distinct dev paragraph (--corpus_file)
Paragraph ids are "<article title>/<paragraph number>"; questions keep SQuAD's ids.
"""

import json
import os

from bert_tf import fileio


def read_squad_pairs(path, max_articles=0):
    """(pairs, paragraphs) of a SQuAD json file (its first `max_articles` articles when > 0):
    pairs are {"id", "anchor", "positive"} per question, paragraphs {"id", "text"} per
    distinct paragraph text, both in file order."""
    with open(path, encoding="utf-8") as f:
        try:
            data = json.load(f)["data"]
        except (json.JSONDecodeError, KeyError, TypeError) as e:
            raise ValueError(f"{path}: not a SQuAD json file ({e})") from None
    pairs, paragraphs, seen = [], [], set()
    for article in data[:max_articles or None]:
        for number, paragraph in enumerate(article["paragraphs"]):
            context = paragraph["context"]
            if context not in seen:
                seen.add(context)
                paragraphs.append({"id": f"{article['title']}/{number}", "text": context})
            for qa in paragraph["qas"]:
                pairs.append({"id": qa["id"], "anchor": qa["question"], "positive": context})
    return pairs, paragraphs


def _jsonl(rows):
    return "".join(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n" for row in rows)


def write_squad_retrieval(train_file, dev_file, output_dir, max_articles=0):
    """Writes train.jsonl, dev.jsonl and dev_corpus.jsonl (module docstring) into output_dir;
    returns {name: number of rows}."""
    fileio.makedirs(output_dir)
    train, _ = read_squad_pairs(train_file, max_articles)
    dev, corpus = read_squad_pairs(dev_file, max_articles)
    files = {"train.jsonl": train, "dev.jsonl": dev, "dev_corpus.jsonl": corpus}
    for name, rows in files.items():
        fileio.atomic_write_text(os.path.join(output_dir, name), _jsonl(rows))
    return {name: len(rows) for name, rows in files.items()}
