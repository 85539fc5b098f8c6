"""run_ner's task distillation: a student tagger trained on the gold tags and on the soft
targets of a fine-tuned run_ner run (--teacher_checkpoint), by
bert_tf.objectives.distillation.TaggingDistillationObjective.

The teacher scores every word of the training units once, before training, with its own
tokenization (vocabulary, casing, max_seq_length and doc_stride, from its run_options.json),
each word from the window where it has the most context, as run_ner predicts. Those per-word
logits are then placed at the word's first sub-token in each of the student's windows, so the
two models may tokenize differently (another vocabulary, shorter windows): they meet at words,
where the tags are. The word logits are kept in the output_dir's teacher_targets.npz
(FinetuneTask.teacher_outputs), so a resumed or repeated run does not score the words again.
"""

import hashlib
import logging
import time

import numpy as np

logger = logging.getLogger("bert_tf")


def teacher_word_logits(teacher, units, batch_size, default_stride):
    """The teacher's logits of each word of `units` (lists of words): one float32
    [num_words, num_labels] array per unit. `default_stride`: the windows' stride when the
    teacher's run did not record one."""
    import tensorflow as tf

    from bert_tf.checkpoints import load_weights
    from bert_tf.data.arrays import arrays_dataset
    from bert_tf.data.ner import WordScores, encode_units
    from bert_tf.model import BertEncoder, BertTokenClassifier
    from bert_tf.objectives.tagging import MODEL_KEYS
    from bert_tf.tokenization import FullTokenizer
    start = time.perf_counter()
    tokenizer = FullTokenizer(teacher.vocab_file, do_lower_case=teacher.do_lower_case)
    features = encode_units(units, tokenizer, teacher.max_seq_length,
                            teacher.doc_stride or default_stride)
    model = BertTokenClassifier(BertEncoder(teacher.config), len(teacher.labels))
    logger.info("teacher: %s", load_weights(model, teacher.path, require_heads=True).summary())

    @tf.function(reduce_retracing=True, autograph=False)
    def forward(batch):
        outputs = model({k: batch[k] for k in MODEL_KEYS}, training=False)
        return tf.cast(outputs["logits"], tf.float32)

    scores = WordScores(features, [len(words) for words in units], len(teacher.labels))
    for batch in arrays_dataset(features.arrays, batch_size, is_training=False):
        for index, logits in zip(batch["window_index"].numpy(), forward(batch).numpy()):
            scores.add(int(index), logits)
    found = scores.result()
    logger.info("teacher: logits of %d words in %d windows (%s, seq %d) in %.1f s",
                sum(len(words) for words in units), features.num_windows, teacher.path,
                teacher.max_seq_length, time.perf_counter() - start)
    return found


def words_fingerprint(units):
    """sha256 over the words of `units` (lists of words), unit by unit: what the teacher's word
    logits were computed from (the key of their cache)."""
    digest = hashlib.sha256()
    for words in units:
        digest.update("\x00".join(words).encode("utf-8") + b"\x01")
    return digest.hexdigest()


def window_teacher_logits(features, word_logits, num_labels):
    """float32 [windows, S, num_labels]: in each window of the student's `features`
    (TaggingFeatures), every word's `word_logits` (per unit, [num_words, num_labels]) at its
    first sub-token, zeros elsewhere (positions the loss does not see)."""
    logits = np.zeros(features.arrays["input_ids"].shape + (num_labels,), np.float32)
    for i, window in enumerate(features.windows):
        logits[i, window.positions] = word_logits[window.unit][window.first_word:window.end_word]
    return logits
