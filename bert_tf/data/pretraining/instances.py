"""Sentence-pair instances (google-research/bert's algorithm) over token offsets.

A shard's tokens live in one flat id array; sentence s spans flat[offsets[s]:offsets[s + 1]] and
each document is a contiguous range of sentences. Segment A is always a contiguous run of a
document's sentences, and so is B (the actual next sentences, or a run from a random document), so
an instance is four flat offsets (a0, a1, b0, b1) plus its NSP label. The control flow that
consumes random numbers runs per instance in Python; everything per token is numpy.

Differences from the original that do not change the distribution of what is produced:
documents are not shuffled before the passes (instances are shuffled afterwards anyway), and
truncation draws how many tokens leave each side from the front as a binomial instead of one coin
per token (same law: every removal picks front or back with probability 1/2).
"""

import bisect

import numpy as np


def layout_instances(offsets, doc_first, doc_end, max_num_tokens, short_seq_prob, dupe_factor,
                     rng):
    """Untruncated instances of every document, `dupe_factor` passes.

    offsets: list of sentence start offsets into the flat token array, plus the final end;
    doc_first/doc_end: lists, document d is sentences [doc_first[d], doc_end[d]);
    rng: random.Random. Returns int64 arrays (a0, a1, b0, b1, is_random_next, forced): forced
    marks NotNext pairs made because the chunk held a single sentence (no coin was tossed).
    """
    rand = rng.random
    n_docs = len(doc_first)
    out = []
    append = out.append
    for _ in range(dupe_factor):
        for d in range(n_docs):
            end = doc_end[d]
            i = chunk_start = doc_first[d]
            # Target length drawn once per document, as the original does.
            target = max_num_tokens
            if rand() < short_seq_prob:
                target = 2 + int(rand() * (max_num_tokens - 1))
            start_token = offsets[i]
            while i < end:
                if i == end - 1 or offsets[i + 1] - start_token >= target:
                    n_chunk = i - chunk_start + 1
                    a_end = 1 + int(rand() * (n_chunk - 1)) if n_chunk >= 2 else 1
                    a1 = offsets[chunk_start + a_end]
                    forced = n_chunk == 1
                    if forced or rand() < 0.5:
                        target_b = target - (a1 - start_token)
                        for _ in range(10):  # a different document, if one turns up
                            r = int(rand() * n_docs)
                            if r != d:
                                break
                        r_first, r_end = doc_first[r], doc_end[r]
                        r_start = r_first + int(rand() * (r_end - r_first))
                        b0 = offsets[r_start]
                        # Sentences from r_start until B reaches target_b (or the document ends).
                        k = bisect.bisect_left(offsets, b0 + target_b, r_start + 1, r_end + 1)
                        append((start_token, a1, b0, offsets[min(k, r_end)], 1, forced))
                        i -= n_chunk - a_end  # the unused sentences go back
                    else:
                        append((start_token, a1, a1, offsets[i + 1], 0, False))
                    chunk_start = i + 1
                    start_token = offsets[i + 1]
                i += 1
    if not out:
        return tuple(np.zeros(0, np.int64) for _ in range(6))
    table = np.asarray(out, np.int64)
    return tuple(table[:, j] for j in range(6))


def truncate_pairs(a0, a1, b0, b1, max_num_tokens, rng):
    """Trims the longer side (B on ties) one token at a time, each from the front or the back at
    random, until len(A) + len(B) <= max_num_tokens. rng: numpy Generator. Returns new offsets."""
    len_a, len_b = a1 - a0, b1 - b0
    excess = np.maximum(len_a + len_b - max_num_tokens, 0)
    # While the sides differ the longer one shrinks; once equal, B and A alternate (B first).
    first = np.minimum(excess, np.abs(len_a - len_b))
    rest = excess - first
    cut_a = np.where(len_a > len_b, first, 0) + rest // 2
    cut_b = np.where(len_a > len_b, 0, first) + (rest + 1) // 2
    front_a = rng.binomial(cut_a, 0.5)
    front_b = rng.binomial(cut_b, 0.5)
    return a0 + front_a, a1 - (cut_a - front_a), b0 + front_b, b1 - (cut_b - front_b)


def assemble_tokens(flat, a0, a1, b0, b1, max_seq_length, cls_id, sep_id):
    """[CLS] A [SEP] B [SEP] padded with 0: ids int32 [n, max_seq_length], len_a, len_b."""
    len_a, len_b = (a1 - a0).astype(np.int32), (b1 - b0).astype(np.int32)
    la, lb = len_a[:, None], len_b[:, None]
    pos = np.arange(max_seq_length, dtype=np.int32)[None, :]
    # Flat index of the token at each position (A: a0 + pos - 1, B: b0 + pos - len_a - 2).
    source = np.where(pos <= la, (a0 - 1).astype(np.int32)[:, None],
                      (b0 - 2).astype(np.int32)[:, None] - la) + pos
    real = (pos >= 1) & (pos <= la + lb + 1) & (pos != la + 1)
    ids = np.where(real, np.take(flat, source, mode="clip"), 0).astype(np.int32)
    ids[(pos == la + 1) | (pos == la + lb + 2)] = sep_id
    ids[:, 0] = cls_id
    return ids, len_a, len_b
