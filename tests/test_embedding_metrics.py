"""Retrieval and STS metrics of sentence embeddings against values worked out by hand (the
arithmetic is in each test)."""

import math

import numpy as np
import pytest

from bert_tf.metrics.embedding import (RetrievalSet, ScoredPairs, cosine_similarities,
                                       evaluate_retrieval, evaluate_sts, retrieval_metrics,
                                       top_k)


def test_cosine_similarities_ignore_length():
    a = np.array([[3.0, 4.0], [1.0, 0.0]])
    b = np.array([[6.0, 8.0], [0.0, 2.0]])
    assert np.allclose(cosine_similarities(a, b), [1.0, 0.0])


def test_top_k_ranks_by_cosine_and_breaks_ties_by_corpus_order():
    corpus = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 0.0], [1.0, 1.0]])
    # cosines with [1, 0]: 1, 0, 1, 0.707 -> 0 and 2 tie (0 first), then 3, then 1
    assert top_k(np.array([[1.0, 0.0]]), corpus, k=10).tolist() == [[0, 2, 3, 1]]


def test_retrieval_metrics_by_hand():
    ranked = np.array([[4, 2, 7], [1, 0, 3], [5, 6, 8]])
    relevant = [[2], [1, 3], [9]]
    values = retrieval_metrics(ranked, relevant, k=3)
    # query 0: first hit at rank 2; query 1: ranks 1 and 3; query 2: no hit
    assert values["mrr_at_3"] == pytest.approx((1 / 2 + 1 + 0) / 3)
    assert values["recall_at_1"] == pytest.approx((0 + 1 / 2 + 0) / 3)
    assert values["recall_at_3"] == pytest.approx((1 + 1 + 0) / 3)
    ndcg_0 = (1 / math.log2(3)) / 1.0
    ndcg_1 = (1 + 1 / math.log2(4)) / (1 + 1 / math.log2(3))
    assert values["ndcg_at_3"] == pytest.approx((ndcg_0 + ndcg_1 + 0) / 3)


def test_a_query_without_relevant_texts_is_an_error():
    with pytest.raises(ValueError, match="without relevant"):
        retrieval_metrics(np.array([[0]]), [[]], k=1)


def test_evaluate_retrieval_embeds_each_distinct_text_once():
    vectors = {"q1": [1.0, 0.0], "q2": [0.0, 1.0], "a": [0.9, 0.1], "b": [0.1, 0.9]}
    calls = []

    def embed(texts):
        calls.append(list(texts))
        return np.array([vectors[t] for t in texts])

    data = RetrievalSet(queries=["q1", "q2", "q1"], corpus=["a", "b"], relevant=[[0], [1], [1]])
    values = evaluate_retrieval(embed, data)
    assert calls == [["a", "b"], ["q1", "q2"]]
    assert values["mrr_at_10"] == pytest.approx((1 + 1 + 1 / 2) / 3)
    assert values["recall_at_1"] == pytest.approx(2 / 3)
    assert values["recall_at_10"] == 1.0


def test_evaluate_sts_spearman_of_cosines():
    vectors = {"x": [1.0, 0.0], "y": [1.0, 1.0], "z": [0.0, 1.0], "w": [-1.0, 0.0]}
    pairs = ScoredPairs(texts_a=["x", "x", "x"], texts_b=["y", "z", "w"], scores=[5, 3, 0])
    values = evaluate_sts(lambda texts: np.array([vectors[t] for t in texts]), pairs)
    # cosines 0.707, 0, -1 rank like the scores
    assert values["spearman"] == pytest.approx(1.0)
    assert -1.0 <= values["pearson"] <= 1.0


def test_relevant_index_outside_the_corpus_is_an_error():
    with pytest.raises(ValueError, match="outside the corpus"):
        RetrievalSet(queries=["q"], corpus=["a"], relevant=[[1]])
