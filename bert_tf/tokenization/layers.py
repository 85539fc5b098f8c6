"""In-graph Keras layers: google-research-exact WordPiece tokenization and BERT input packing.

Both run in tf.data pipelines, in Keras models and in SavedModels served by stock
tensorflow_model_server (TF Serving 2.12 or later: see serving_ops.py for the ops used).
The vocabulary is saved with the layer: as an asset of .keras files (save_assets) and as a
SavedModel asset (assets/vocab.txt) that backs the id -> token table.
"""

import atexit
import os
import shutil
import tempfile
from typing import Sequence

import keras
import tensorflow as tf

from bert_tf.contract import MAX_SEQ_LENGTH
from bert_tf.tokenization import packing, vocab as _vocab, wordpiece
from bert_tf.tokenization.graph_tokenizer import GraphWordpiece

_VOCAB_ASSET = "vocab.txt"


def _vocab_file_for(tokens, path):
    """A file holding exactly `tokens`, one per line: `path` itself when it already does,
    else a new temporary file, kept while the process lives (a SavedModel export copies it)
    and removed at exit."""
    content = ("\n".join(tokens) + "\n").encode("utf-8")
    if path is not None:
        with tf.io.gfile.GFile(path, "rb") as f:
            if f.read() == content:
                return os.fspath(path)
    folder = tempfile.mkdtemp(prefix="bert_tf_vocab_")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    out = os.path.join(folder, _VOCAB_ASSET)
    with open(out, "wb") as f:
        f.write(content)
    return out


def _as_batch(strings):
    """tf.string [B] from a scalar, [B] or [B, 1] input; also returns the original rank."""
    strings = tf.convert_to_tensor(strings, tf.string)
    rank = strings.shape.rank
    if rank == 0:
        return tf.reshape(strings, [1]), 0
    if rank == 2:
        return tf.reshape(strings, [-1]), 2
    if rank != 1:
        raise ValueError(f"expected strings of shape [], [batch] or [batch, 1], "
                         f"got {strings.shape}")
    return strings, 1


@keras.saving.register_keras_serializable(package="bert_tf")
class BertTokenizerLayer(keras.layers.Layer):
    """Strings -> ragged WordPiece ids, identical to FullTokenizer.

    Args:
      vocabulary: vocabulary file path or list of tokens (None only while loading).
      lower_case: uncased (True) or cased (False) model.
      with_offsets: also return byte offsets into the original strings.
      max_chars_per_word: longer words become [UNK] (google-research: 200).

    Call: strings [B] (or a scalar, or [B, 1]). Returns int32 ragged ids [B, None], or with
    offsets a dict {"token_ids", "start_offsets", "end_offsets"} (offsets int64, [start, end)
    in bytes of the UTF-8 string).
    """

    def __init__(self, vocabulary: str | os.PathLike | Sequence[str] | None = None,
                 lower_case: bool = True, with_offsets: bool = False,
                 max_chars_per_word: int = wordpiece.MAX_INPUT_CHARS_PER_WORD,
                 **kwargs) -> None:
        kwargs.setdefault("dtype", "int32")
        kwargs.setdefault("trainable", False)
        super().__init__(**kwargs)
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.lower_case = bool(lower_case)
        self.with_offsets = bool(with_offsets)
        self.max_chars_per_word = int(max_chars_per_word)
        self.vocabulary = None
        if vocabulary is not None:
            self.set_vocabulary(vocabulary)

    def set_vocabulary(self, vocabulary: str | os.PathLike | Sequence[str]) -> None:
        """Sets the vocabulary (file path or token list); it must hold all special tokens."""
        if isinstance(vocabulary, (str, os.PathLike)):
            vocab = _vocab.Vocabulary.from_file(vocabulary)
            path = vocabulary
        else:
            vocab, path = _vocab.Vocabulary(list(vocabulary)), None
        vocab.require()
        self.vocabulary = vocab
        with tf.init_scope():
            self._wordpiece = GraphWordpiece.shared(tuple(vocab.id_to_token), self.lower_case,
                                                    unk_token=_vocab.UNK,
                                                    max_chars_per_word=self.max_chars_per_word)
            self.vocab_asset = tf.saved_model.Asset(_vocab_file_for(vocab.id_to_token, path))
            self.id_to_token_table = tf.lookup.StaticHashTable(
                tf.lookup.TextFileInitializer(
                    self.vocab_asset, tf.int64, tf.lookup.TextFileIndex.LINE_NUMBER,
                    tf.string, tf.lookup.TextFileIndex.WHOLE_LINE),
                default_value=_vocab.UNK)

    def _check_ready(self):
        if self.vocabulary is None:
            raise ValueError(f"{self.name}: no vocabulary set (pass `vocabulary=`)")

    def vocabulary_size(self) -> int:
        self._check_ready()
        return len(self.vocabulary)

    def special_ids(self) -> dict[str, int]:
        """{"[PAD]": id, "[UNK]": id, "[CLS]": id, "[SEP]": id, "[MASK]": id}."""
        self._check_ready()
        return self.vocabulary.special_ids()

    def id_to_token(self, ids: tf.Tensor | tf.RaggedTensor) -> tf.Tensor | tf.RaggedTensor:
        """Token strings of int ids (any shape, dense or ragged), via the vocabulary asset."""
        self._check_ready()
        ids = tf.cast(ids, tf.int64)
        if isinstance(ids, tf.RaggedTensor):
            return ids.with_flat_values(self.id_to_token_table.lookup(ids.flat_values))
        return self.id_to_token_table.lookup(ids)

    def tokenize(self, strings: tf.Tensor, with_offsets: bool | None = None
                 ) -> tf.RaggedTensor | dict[str, tf.RaggedTensor]:
        """Like call(), with `with_offsets` overridable per call."""
        self._check_ready()
        with_offsets = self.with_offsets if with_offsets is None else with_offsets
        batch, rank = _as_batch(strings)
        out = self._wordpiece.tokenize(batch, with_offsets=with_offsets)
        out = out if with_offsets else (out,)
        ids = out[0].with_flat_values(tf.cast(out[0].flat_values, tf.int32))
        out = (ids,) + tuple(out[1:])
        if rank == 0:
            out = tuple(t[0] for t in out)
        if not with_offsets:
            return out[0]
        return dict(zip(("token_ids", "start_offsets", "end_offsets"), out))

    def build(self, input_shape=None):
        self.built = True  # no weights: the vocabulary is set in __init__ or load_assets

    def call(self, strings):
        return self.tokenize(strings)

    def compute_output_spec(self, strings):
        shape = tuple(strings.shape[:1]) + (None,)
        ids = keras.KerasTensor(shape, dtype="int32", ragged=True)
        if not self.with_offsets:
            return ids
        return {"token_ids": ids,
                "start_offsets": keras.KerasTensor(shape, dtype="int64", ragged=True),
                "end_offsets": keras.KerasTensor(shape, dtype="int64", ragged=True)}

    def get_config(self):
        config = super().get_config()
        config.update(lower_case=self.lower_case, with_offsets=self.with_offsets,
                      max_chars_per_word=self.max_chars_per_word)
        return config

    def save_assets(self, dir_path):
        self._check_ready()
        with open(os.path.join(dir_path, _VOCAB_ASSET), "w", encoding="utf-8") as f:
            f.write("\n".join(self.vocabulary.id_to_token) + "\n")

    def load_assets(self, dir_path):
        # Pass tokens, not the path: Keras deletes `dir_path` after loading, and a later
        # SavedModel export needs the vocabulary file to still exist.
        path = os.path.join(dir_path, _VOCAB_ASSET)
        self.set_vocabulary(_vocab.Vocabulary.from_file(path).id_to_token)


@keras.saving.register_keras_serializable(package="bert_tf")
class BertPreprocessor(keras.layers.Layer):
    """Raw text (one text, or a pair) -> BERT inputs of length `seq_length`.

    `[CLS] A [SEP]` or `[CLS] A [SEP] B [SEP]`, padded with id 0; pairs are truncated as
    google-research/bert's run_classifier does (the longer side loses its last token, B on
    ties). Tokenization is BertTokenizerLayer's, i.e. exactly FullTokenizer's.

    Call: strings [B], or a tuple/list (text_a, text_b) of such. Returns a dict of int32
    [B, seq_length] tensors "input_ids", "input_mask", "segment_ids"; with `with_offsets`
    also int64 "start_offsets", "end_offsets": the byte span of each token in its own text
    (segment_ids says which), -1 at [CLS], [SEP] and padding.

    With `doc_stride` > 0 a long first text is not truncated but cut into windows
    (bert_tf.tokenization.windows, at most `max_windows` per text when > 0): the tensors are
    [N, seq_length] over all windows, plus int32 "window_example" [N], each window's row.

    Args:
      vocabulary, lower_case, max_chars_per_word: as BertTokenizerLayer's (unused when
        `tokenizer` is given).
      seq_length: length of every output row, [CLS] and [SEP] included.
      with_offsets: also return the tokens' byte offsets (not with `doc_stride`).
      tokenizer: a BertTokenizerLayer to share (or its serialized config); default: one
        built from `vocabulary`.
      doc_stride: 0 truncates; N > 0 cuts a long first text into windows whose starts are N
        WordPieces apart.
      max_windows: with `doc_stride`, keep at most this many windows per text (0: all).
    """

    def __init__(self, vocabulary: str | os.PathLike | Sequence[str] | None = None,
                 lower_case: bool = True, seq_length: int = MAX_SEQ_LENGTH,
                 with_offsets: bool = False,
                 max_chars_per_word: int = wordpiece.MAX_INPUT_CHARS_PER_WORD,
                 tokenizer: "BertTokenizerLayer | dict | None" = None,
                 doc_stride: int = 0, max_windows: int = 0, **kwargs) -> None:
        kwargs.setdefault("dtype", "int32")
        kwargs.setdefault("trainable", False)
        super().__init__(**kwargs)
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.seq_length = int(seq_length)
        self.with_offsets = bool(with_offsets)
        self.doc_stride, self.max_windows = int(doc_stride), int(max_windows)
        if self.doc_stride and self.with_offsets:
            raise ValueError("BertPreprocessor: with_offsets is not available with doc_stride "
                             "windows")
        if isinstance(tokenizer, dict):
            tokenizer = keras.saving.deserialize_keras_object(tokenizer)
        self.tokenizer = tokenizer or BertTokenizerLayer(
            vocabulary, lower_case=lower_case, max_chars_per_word=max_chars_per_word,
            name="tokenizer")

    def build(self, input_shape=None):
        self.built = True  # no weights

    def call(self, inputs):
        texts = list(inputs) if isinstance(inputs, (tuple, list)) else [inputs]
        if len(texts) not in (1, 2):
            raise ValueError(f"{self.name}: expected one text or a pair, got {len(texts)}")
        special = self.tokenizer.special_ids()
        batches = [_as_batch(t) for t in texts]
        rank = batches[0][1]
        tokenized = [self.tokenizer.tokenize(b, with_offsets=self.with_offsets)
                     for b, _ in batches]
        if self.doc_stride:
            from bert_tf.tokenization.windows import pack_windows
            out, window_example = pack_windows(tokenized, self.seq_length, self.doc_stride,
                                               special[_vocab.CLS], special[_vocab.SEP],
                                               self.max_windows)
            return dict(out, window_example=window_example)
        if self.with_offsets:
            segments = [t["token_ids"] for t in tokenized]
            extras = ([t["start_offsets"] for t in tokenized],
                      [t["end_offsets"] for t in tokenized])
        else:
            segments, extras = tokenized, ()
        out, packed = packing.pack(segments, self.seq_length, special[_vocab.CLS],
                                   special[_vocab.SEP], extras)
        if self.with_offsets:
            out["start_offsets"], out["end_offsets"] = packed
        if rank == 0:
            out = {k: v[0] for k, v in out.items()}
        return out

    def compute_output_spec(self, inputs):
        first = inputs[0] if isinstance(inputs, (tuple, list)) else inputs
        shape = tuple(first.shape[:1]) + (self.seq_length,)
        if self.doc_stride:
            shape = (None, self.seq_length)
        out = {k: keras.KerasTensor(shape, dtype="int32")
               for k in ("input_ids", "input_mask", "segment_ids")}
        if self.doc_stride:
            out["window_example"] = keras.KerasTensor((None,), dtype="int32")
        if self.with_offsets:
            out.update({k: keras.KerasTensor(shape, dtype="int64")
                        for k in ("start_offsets", "end_offsets")})
        return out

    def get_config(self):
        config = super().get_config()
        config.update(seq_length=self.seq_length, with_offsets=self.with_offsets,
                      doc_stride=self.doc_stride, max_windows=self.max_windows,
                      tokenizer=keras.saving.serialize_keras_object(self.tokenizer))
        return config
