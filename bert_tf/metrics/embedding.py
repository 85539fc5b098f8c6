"""Metrics of sentence embeddings (run_embedding): STS-style correlation of cosine similarities
with gold scores, and retrieval of relevant texts from a corpus.

Retrieval ranks the whole corpus for each query by cosine similarity (ties: the earlier corpus
text first) and reports, averaged over queries, with binary relevance:

  mrr_at_10      1 / rank of the first relevant text in the top 10 (0 when none is)
  recall_at_1    the fraction of a query's relevant texts found in the top 1
  recall_at_10   ... in the top 10
  ndcg_at_10     DCG of the top 10 (a relevant text at rank r counts 1 / log2(r + 1)) divided by
              that of the ideal ranking (all relevant texts first)

The evaluate_* helpers take `embed(texts) -> [n, hidden]` (the caller batches) and embed each
distinct text once: the corpus once per evaluation, however many queries there are.
"""

import dataclasses

import numpy as np

from bert_tf.metrics.classification import pearson_corr, spearman_corr

TOP_K = 10
QUERY_CHUNK = 1024      # queries scored against the corpus at a time (bounds the score matrix)


def normalize(embeddings):
    """Rows scaled to unit L2 norm (zero rows stay zero), float64."""
    embeddings = np.asarray(embeddings, np.float64)
    norms = np.linalg.norm(embeddings, axis=-1, keepdims=True)
    return embeddings / np.where(norms > 0, norms, 1.0)


def cosine_similarities(a, b):
    """Row-wise cosine similarity of two [n, hidden] arrays: [n]."""
    return np.sum(normalize(a) * normalize(b), axis=-1)


def sts_metrics(embeddings_a, embeddings_b, scores):
    """spearman and pearson of the pairs' cosine similarities against their gold scores."""
    cosines = cosine_similarities(embeddings_a, embeddings_b)
    return {"spearman": spearman_corr(cosines, scores), "pearson": pearson_corr(cosines, scores)}


def top_k(query_embeddings, corpus_embeddings, k=TOP_K):
    """[queries, min(k, corpus)] corpus indices, most similar (cosine) first."""
    queries, corpus = normalize(query_embeddings), normalize(corpus_embeddings)
    k = min(k, len(corpus))
    ranked = []
    for start in range(0, len(queries), QUERY_CHUNK):
        scores = queries[start:start + QUERY_CHUNK] @ corpus.T
        ranked.append(np.argsort(-scores, axis=1, kind="stable")[:, :k])
    return np.concatenate(ranked) if ranked else np.zeros((0, k), np.int64)


def retrieval_metrics(ranked, relevant, k=TOP_K):
    """mrr_at_k, recall_at_1, recall_at_k and ndcg_at_k of `ranked` ([queries, >= k] corpus
    indices, best first) against `relevant` (one collection of relevant corpus indices per
    query)."""
    if len(ranked) != len(relevant):
        raise ValueError(f"{len(ranked)} rankings for {len(relevant)} queries")
    if not len(relevant):
        raise ValueError("no queries to evaluate")
    discounts = 1.0 / np.log2(np.arange(2, k + 2))
    names = (f"mrr_at_{k}", "recall_at_1", f"recall_at_{k}", f"ndcg_at_{k}")
    totals = dict.fromkeys(names, 0.0)
    for row, gold in zip(ranked, relevant):
        gold = set(int(i) for i in gold)
        if not gold:
            raise ValueError("a query without relevant texts cannot be evaluated")
        hits = np.array([int(i) in gold for i in row[:k]], np.float64)
        first = np.flatnonzero(hits)
        ideal = discounts[:min(len(gold), k)].sum()
        values = (1.0 / (first[0] + 1) if len(first) else 0.0, hits[:1].sum() / len(gold),
                  hits.sum() / len(gold), float(hits @ discounts[:len(hits)]) / ideal)
        for name, value in zip(names, values):
            totals[name] += value
    return {name: total / len(relevant) for name, total in totals.items()}


@dataclasses.dataclass
class RetrievalSet:
    """Queries, the corpus they search, and for each query the indices of its relevant corpus
    texts."""

    queries: list
    corpus: list
    relevant: list

    def __post_init__(self):
        if len(self.queries) != len(self.relevant):
            raise ValueError(f"{len(self.queries)} queries but {len(self.relevant)} "
                             f"relevance lists")
        if any(not 0 <= i < len(self.corpus) for gold in self.relevant for i in gold):
            raise ValueError(f"a relevant index is outside the corpus of {len(self.corpus)} "
                             f"texts")


@dataclasses.dataclass
class ScoredPairs:
    """STS-style pairs: two texts and a gold similarity score each."""

    texts_a: list
    texts_b: list
    scores: list


def embed_distinct(embed, texts):
    """embed() of each distinct text once; rows in the order of `texts`."""
    distinct = list(dict.fromkeys(texts))
    position = {text: i for i, text in enumerate(distinct)}
    embeddings = np.asarray(embed(distinct))
    return embeddings[[position[text] for text in texts]]


def evaluate_retrieval(embed, retrieval_set, k=TOP_K):
    """retrieval_metrics of `embed` on a RetrievalSet: the corpus embedded once, then the
    queries."""
    corpus = embed_distinct(embed, retrieval_set.corpus)
    queries = embed_distinct(embed, retrieval_set.queries)
    return retrieval_metrics(top_k(queries, corpus, k), retrieval_set.relevant, k)


def evaluate_sts(embed, pairs):
    """sts_metrics of `embed` on ScoredPairs, each distinct text embedded once."""
    texts = list(pairs.texts_a) + list(pairs.texts_b)
    embeddings = embed_distinct(embed, texts)
    n = len(pairs.texts_a)
    return sts_metrics(embeddings[:n], embeddings[n:], pairs.scores)
