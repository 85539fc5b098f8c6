"""SWAG features: each example's C choices packed as [CLS] sent1 [SEP] sent2 ending [SEP],
truncated with google-research's pair rule (drop the last token of the longer side, the second
on ties), into arrays [N, C, max_seq_length]."""

import numpy as np


def truncate_pair(a, b, budget):
    """Lengths kept of token lists a and b under google-research's _truncate_seq_pair."""
    len_a, len_b = len(a), len(b)
    while len_a + len_b > budget:
        if len_a > len_b:
            len_a -= 1
        else:
            len_b -= 1
    return len_a, len_b


def encode_swag(examples, tokenizer, max_seq_length):
    """Arrays input_ids, input_mask, segment_ids [N, C, S] (int32), label_ids [N] (int32, 0
    when unknown), example_index [N]. All examples must have the same number of choices."""
    if max_seq_length < 4:
        raise ValueError(f"max_seq_length={max_seq_length} leaves no room for text")
    if not examples:
        raise ValueError("no examples")
    choices = len(examples[0].endings)
    special = tokenizer.special_ids
    cls_id, sep_id = special["[CLS]"], special["[SEP]"]
    n = len(examples)
    shape = (n, choices, max_seq_length)
    arrays = {"input_ids": np.zeros(shape, np.int32), "input_mask": np.zeros(shape, np.int32),
              "segment_ids": np.zeros(shape, np.int32),
              "label_ids": np.zeros(n, np.int32), "example_index": np.arange(n, dtype=np.int32)}
    for i, example in enumerate(examples):
        if len(example.endings) != choices:
            raise ValueError(f"example {example.example_id} (line {example.line}) has "
                             f"{len(example.endings)} endings, the first one {choices}")
        context = tokenizer.encode(example.context)
        for c, (_, second) in enumerate(example.choice_texts()):
            ending = tokenizer.encode(second)
            keep_a, keep_b = truncate_pair(context, ending, max_seq_length - 3)
            ids = [cls_id] + context[:keep_a] + [sep_id] + ending[:keep_b] + [sep_id]
            arrays["input_ids"][i, c, :len(ids)] = ids
            arrays["input_mask"][i, c, :len(ids)] = 1
            arrays["segment_ids"][i, c, keep_a + 2:len(ids)] = 1
        arrays["label_ids"][i] = example.label or 0
    return arrays
