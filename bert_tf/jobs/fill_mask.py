"""predict_masked: the top-k vocabulary tokens, with probabilities, for each [MASK] of a text.

Texts come one per line (`text_a` or `text_a ||| text_b`, as extract_features reads them) or as
strings. The literal `[MASK]` becomes the mask token (google-research's tokenizer would split it
into `[`, `mask`, `]`); each mask is predicted independently by the masked-LM head of a
pre-trained checkpoint. Probabilities are the head's softmax over the whole vocabulary, so the k
shown for a mask sum to at most 1. Special tokens ([PAD], [CLS], [SEP], [MASK], [UNK],
[unusedN]) are left out of the top k unless include_special_tokens.

A checkpoint without the masked-LM head (cls/predictions/*), such as a sentence-embedding
model, is refused with MissingHeadError. With --export_dir the model is exported for TensorFlow
Serving ("fill_mask" task, the same top_k), after the texts if any.
"""

import dataclasses
import json
import logging
import time

import numpy as np

from bert_tf import fileio
from bert_tf.jobs.checks import load_tokenizer
from bert_tf.jobs.options import ModelOptions
from bert_tf.jobs.results import export_model
from bert_tf.options import option
from bert_tf.tokenization.vocab import special_token_ids

logger = logging.getLogger("bert_tf")

MASK = "[MASK]"


class MissingHeadError(ValueError):
    """The checkpoint has no masked-LM head."""


@dataclasses.dataclass(kw_only=True)
class FillMaskOptions(ModelOptions):
    init_checkpoint: str = option(
        None, "A checkpoint with its masked-LM head (google-research TF1 prefix, HuggingFace "
        "folder, or a run_pretraining output_dir).", required=True)
    vocab_file: str = option(
        None, "The vocabulary file the model was trained on (default: vocab.txt beside "
        "--init_checkpoint).")
    export_dir: str = option(
        None, "Also export the model for TensorFlow Serving as the next numbered version in "
        "this folder (text with [MASK] tokens in, the --top_k tokens and probabilities of each "
        "mask out); alone, without --text/--input_file, only exports.")
    max_seq_length: int = option(
        None, "Maximum sequence length after tokenization (default: the model's "
        "max_position_embeddings; batches are padded to their longest text).")
    input_file: str = option(
        None, "One text per line instead of --text (`text_a` or `text_a ||| text_b`; blank "
        "lines are skipped).")
    text: list = option(None, "A text with [MASK] tokens (repeat for several).", multi=True)
    output_file: str = option(
        None, "Write JSON lines here (linex_index, text, tokens, masks: [{position, "
        "predictions: [{token, token_id, probability}]}]); default: print.")
    batch_size: int = option(32, "Texts per batch.")
    top_k: int = option(5, "Predictions per [MASK].")
    include_special_tokens: bool = option(
        False, "Also rank [PAD], [CLS], [SEP], [MASK], [UNK] and [unusedN].")

    serving_kind = "fill_mask"

    def validate(self):
        if not self.init_checkpoint:
            raise ValueError("--init_checkpoint is required (a checkpoint with its masked-LM "
                             "head, e.g. a run_pretraining output_dir)")
        if self.input_file and self.text:
            raise ValueError("give exactly one of --input_file and --text")
        if not (self.input_file or self.text or self.export_dir):
            raise ValueError("give exactly one of --input_file and --text (or only "
                             "--export_dir)")
        if self.input_file and not fileio.exists(self.input_file):
            raise FileNotFoundError(f"--input_file {self.input_file} does not exist")
        if self.max_seq_length is None:
            self.max_seq_length = self.config.max_position_embeddings
        self.validate_model()
        if self.top_k < 1 or self.batch_size < 1:
            raise ValueError("--top_k and --batch_size must be >= 1")


@dataclasses.dataclass
class MaskedText:
    index: int
    text: str
    tokens: list
    input_ids: list
    segment_ids: list
    positions: list       # token positions of the masks


def _tokenize_with_masks(tokenizer, text):
    tokens = []
    for k, piece in enumerate(text.split(MASK)):
        if k:
            tokens.append(MASK)
        tokens.extend(tokenizer.tokenize(piece))
    return tokens


def encode_masked(tokenizer, index, text, max_seq_length, where="text"):
    """Packs `text` (or `a ||| b`) as [CLS] a [SEP] (b [SEP]) with google-research's truncation;
    raises ValueError naming `where` if it has no [MASK] or truncation drops one."""
    from bert_tf.jobs.features import pack, split_pair
    text_a, text_b = split_pair(text.strip())
    tokens_a = _tokenize_with_masks(tokenizer, text_a)
    tokens_b = _tokenize_with_masks(tokenizer, text_b) if text_b else None
    masks = tokens_a.count(MASK) + (tokens_b.count(MASK) if tokens_b else 0)
    if not masks:
        raise ValueError(f"{where}: no {MASK} in {text!r}")
    tokens, segment_ids = pack(tokens_a, tokens_b, max_seq_length)
    positions = [i for i, t in enumerate(tokens) if t == MASK]
    if len(positions) != masks:
        raise ValueError(f"{where}: {masks - len(positions)} of {masks} {MASK} tokens fall "
                         f"beyond max_seq_length={max_seq_length} tokens; shorten the text or "
                         f"raise --max_seq_length")
    return MaskedText(index, text, tokens, tokenizer.convert_tokens_to_ids(tokens), segment_ids,
                      positions)


def load_masked_lm(config, init_checkpoint):
    """A BertPretrainer with the checkpoint's encoder and masked-LM head; raises
    MissingHeadError when the checkpoint has no masked-LM head."""
    from bert_tf.checkpoints import load_weights
    from bert_tf.model import BertEncoder, BertPretrainer
    model = BertPretrainer(BertEncoder(config))
    report = load_weights(model, init_checkpoint)
    missing = [name for name in report.missing if name.startswith("cls/predictions/")]
    if missing:
        raise MissingHeadError(
            f"{init_checkpoint} has no masked-LM head (missing {', '.join(missing)}): "
            f"fill-mask needs a checkpoint saved with its pre-training heads, such as a "
            f"run_pretraining output_dir or google-research's bert_model.ckpt; this one holds "
            f"an encoder only (e.g. a sentence-embedding model)")
    return model


def make_predict_fn(model, top_k, excluded_ids):
    """tf.function -> (top-k probabilities, ids) [B, P, k] from the full-vocabulary softmax."""
    import tensorflow as tf
    vocab_size = model.config.vocab_size
    excluded = np.zeros(vocab_size, bool)
    excluded[[i for i in excluded_ids if i < vocab_size]] = True
    excluded = tf.constant(excluded)
    spec = tf.TensorSpec([None, None], tf.int32)

    @tf.function(input_signature=[spec, spec, spec, spec], autograph=False)
    def predict(input_ids, input_mask, segment_ids, positions):
        logits = model({"input_ids": input_ids, "input_mask": input_mask,
                        "segment_ids": segment_ids, "masked_lm_positions": positions},
                       training=False)["mlm_logits"]
        probs = tf.nn.softmax(tf.cast(logits, tf.float32), axis=-1)             # [B, P, V]
        shown = tf.where(excluded, tf.constant(-1.0), probs)
        return tf.math.top_k(shown, k=top_k)
    return predict


def _batch_arrays(items):
    from bert_tf.jobs.features import pad_batch
    arrays = pad_batch(items)
    positions = np.zeros((len(items), max(len(t.positions) for t in items)), np.int32)
    for i, t in enumerate(items):
        positions[i, :len(t.positions)] = t.positions
    return arrays["input_ids"], arrays["input_mask"], arrays["segment_ids"], positions


def _texts(opts):
    if opts.text:
        for i, text in enumerate(opts.text):
            yield i, text, f"--text #{i + 1}"
        return
    from bert_tf.tokenization import convert_to_unicode
    with fileio.open_binary(opts.input_file) as f:
        for i, raw in enumerate(f):
            try:
                text = convert_to_unicode(raw).rstrip("\r\n")
            except UnicodeDecodeError as e:
                raise ValueError(f"{opts.input_file}:{i + 1}: not UTF-8 ({e})") from None
            if text.strip():            # blank lines are skipped (their index is kept)
                yield i, text, f"{opts.input_file}:{i + 1}"


def _validated_tokenizer(opts):
    opts.resolve_vocab_file()
    opts.validate()
    return load_tokenizer(opts)


def load(opts):
    """Validates opts; returns (tokenizer, the BertPretrainer with the checkpoint's head)."""
    return _validated_tokenizer(opts), load_masked_lm(opts.config, opts.init_checkpoint)


def encode_texts(opts, tokenizer):
    """The MaskedText of every text; raises ValueError naming the text or line without a
    [MASK], and an input file without any text."""
    if not (opts.text or opts.input_file):
        return []                               # --export_dir alone
    items = [encode_masked(tokenizer, index, text, opts.max_seq_length, where)
             for index, text, where in _texts(opts)]
    if opts.input_file and not items:
        raise ValueError(f"{opts.input_file}: no text (the file is empty or blank)")
    return items


def predict(opts, tokenizer=None, model=None, items=None):
    """Yields one result dict per text (per MaskedText of `items` when given): {"linex_index",
    "text", "tokens", "masks": [{"position", "predictions": [{"token", "token_id",
    "probability"}]}]}."""
    if model is None:
        tokenizer, model = load(opts)
    if items is None:
        items = (encode_masked(tokenizer, index, text, opts.max_seq_length, where)
                 for index, text, where in _texts(opts))
    vocab = tokenizer.vocabulary.id_to_token
    excluded = [] if opts.include_special_tokens else special_token_ids(vocab)
    # A model whose vocab_size exceeds the vocabulary file (padded tables) has ids no token
    # names: never predict them.
    excluded += list(range(len(vocab), opts.config.vocab_size))
    top_k = min(opts.top_k, opts.config.vocab_size - len(excluded))
    predict_fn = make_predict_fn(model, top_k, excluded)
    batch = []

    def run_batch():
        values, ids = (t.numpy() for t in predict_fn(*_batch_arrays(batch)))
        for b, item in enumerate(batch):
            masks = []
            for p, position in enumerate(item.positions):
                masks.append({"position": position, "predictions": [
                    {"token": vocab[int(i)], "token_id": int(i), "probability": float(v)}
                    for v, i in zip(values[b, p], ids[b, p])]})
            yield {"linex_index": item.index, "text": item.text, "tokens": item.tokens,
                   "masks": masks}
        batch.clear()

    for item in items:
        batch.append(item)
        if len(batch) == opts.batch_size:
            yield from run_batch()
    if batch:
        yield from run_batch()


def run(opts):
    """Predicts every text (writing JSON lines to opts.output_file, atomically, when set), then
    exports the model with opts.export_dir. Returns the list of results."""
    start = time.perf_counter()
    tokenizer = _validated_tokenizer(opts)
    items = encode_texts(opts, tokenizer)        # bad text stops the run before the model loads
    model = load_masked_lm(opts.config, opts.init_checkpoint)
    results = list(predict(opts, tokenizer, model, items))
    if opts.output_file:
        fileio.atomic_write_text(opts.output_file,
                                 "".join(json.dumps(r) + "\n" for r in results))
    logger.info("%d texts in %.1f s%s", len(results), time.perf_counter() - start,
                f" -> {opts.output_file}" if opts.output_file else "")
    export_model(opts, model, opts.contract(top_k=opts.top_k,
                                            include_special_tokens=opts.include_special_tokens))
    return results


def format_result(result):
    """Human-readable lines for one result."""
    lines = [result["text"]]
    for k, mask in enumerate(result["masks"]):
        shown = ", ".join(f"{p['token']} {p['probability']:.3f}" for p in mask["predictions"])
        lines.append(f"  [MASK] #{k + 1} (token {mask['position']}): {shown}")
    return "\n".join(lines)
