"""extract_features: per-token activations of chosen encoder layers, streamed to disk.

Input and output are google-research/bert's extract_features.py's: one example per input line,
`text_a` or `text_a ||| text_b`; one JSON line per input line,
{"linex_index": n, "features": [{"token": t, "layers": [{"index": i, "values": [...]}]}]}, with
every token of the packed input ([CLS] ... [SEP]) and values rounded to 6 decimals, layers in
--layers order (-1 is the last encoder layer). Unlike the original, nothing is held in memory
beyond one batch: lines are read, run and written as they come, so memory stays flat as the
input grows (each batch is padded to its own longest line, which changes the values by float
round-off only).

Optionally a compact file of the same activations: .npz or .tfrecord, per token (the --layers
concatenated) or pooled per line (cls, masked mean, or the pooler output).

Outputs are written to `<file>.partial` and renamed when complete. Progress is committed every
`commit_every` lines (`<output>.progress.json`); a rerun of the same command after an
interruption continues from the last commit.

With --export_dir the encoder is then exported for TensorFlow Serving ("encoder" task; it takes
text_b too when the input had `a ||| b` lines).
"""

import dataclasses
import json
import logging
import os
import re
import shutil
import time
import zipfile

import numpy as np

from bert_tf import contract as _contract, fileio
from bert_tf.data.pretraining.options import PretrainingDataOptions
from bert_tf.jobs.checks import load_tokenizer
from bert_tf.jobs.options import ModelOptions, RuntimeOptions
from bert_tf.jobs.results import export_model
from bert_tf.options import option, option_like

logger = logging.getLogger("bert_tf")

# "cls" and "mean" pool the --layers' token vectors as SentencePooling does (pool_tokens);
# "none" keeps every token, "pooler" is the encoder's pooled_output.
POOLINGS = ("none", "cls", "mean", "pooler")
COMPACT_DTYPES = ("float32", "float16")
_PAIR_RE = re.compile(r"^(.*) \|\|\| (.*)$")


@dataclasses.dataclass(kw_only=True)
class FeatureOptions(ModelOptions, RuntimeOptions):
    vocab_file: str = option(
        None, "The vocabulary file that the BERT model was trained on (default: vocab.txt "
        "beside --init_checkpoint).")
    do_lower_case: bool = option_like(PretrainingDataOptions, "do_lower_case")
    export_dir: str = option(
        None, "After extracting, export the encoder for TensorFlow Serving as the next "
        "numbered version in this folder (pooled_output and sequence_output; text_a and text_b "
        "when the input has `a ||| b` lines).")
    max_seq_length: int = option(
        _contract.MAX_SEQ_LENGTH, "The maximum total input sequence length after WordPiece "
        "tokenization; longer "
        "sequences are truncated.")
    input_file: str = option(None, "One example per line: `text_a` or `text_a ||| text_b`.",
                             required=True)
    output_file: str = option(None, "JSON lines output (one line per input line).")
    layers: str = option("-1,-2,-3,-4",
                         "Encoder layers to output, comma-separated (-1 is the last).")
    batch_size: int = option(32, "Batch size for predictions.")
    compact_file: str = option(
        None, "Also write the features compactly: *.npz (features [rows, D], linex_index, "
        "layers; per token also row_splits and input_ids) or *.tfrecord (one tf.train.Example "
        "per line). D = hidden size x number of --layers (concatenated), or the hidden size for "
        "--pooling=pooler.")
    pooling: str = option(
        "none", "Compact features per token (none) or one vector per line: the [CLS] row, the "
        "mean over the line's tokens, or the pooler output.",
        choices=("none", "cls", "mean", "pooler"))
    compact_dtype: str = option("float32", "Float type of the .npz features.",
                                choices=("float32", "float16"))
    use_one_hot_embeddings: bool = option(    # a flag only: accepted, never read
        False, "Kept for compatibility with google-research's flags; has no effect.")
    commit_every: int = 1000

    serving_kind = "encoder"

    def layer_indexes(self):
        try:
            indexes = [int(x) for x in str(self.layers).split(",")]
        except ValueError:
            raise ValueError(f"--layers must be comma-separated integers, got "
                             f"{self.layers!r}") from None
        n = self.config.num_hidden_layers
        for index in indexes:
            if not -n <= index < n:
                raise ValueError(f"--layers: layer {index} does not exist in a {n}-layer model "
                                 f"(use {-n}..{n - 1}; -1 is the last layer)")
        return indexes

    def validate(self):
        if not self.input_file:
            raise ValueError("--input_file is required")
        if not fileio.exists(self.input_file):
            raise FileNotFoundError(f"--input_file {self.input_file} does not exist")
        if not has_text(self.input_file):
            raise ValueError(f"{self.input_file}: no text (the file is empty or blank)")
        if not (self.output_file or self.compact_file):
            raise ValueError("--output_file is required (or --compact_file alone)")
        for flag in ("output_file", "compact_file"):
            if fileio.is_url(getattr(self, flag) or ""):
                raise ValueError(f"--{flag}: extract_features writes local files (it appends "
                                 f"and resumes); write locally, then copy")
        if not self.init_checkpoint:
            raise ValueError("--init_checkpoint is required")
        self.validate_model()
        if self.batch_size < 1 or self.commit_every < 1:
            raise ValueError("--batch_size and commit_every must be >= 1")
        self.layer_indexes()
        if self.pooling not in POOLINGS:
            raise ValueError(f"--pooling must be one of {', '.join(POOLINGS)}")
        if self.compact_dtype not in COMPACT_DTYPES:
            raise ValueError(f"--compact_dtype must be one of {', '.join(COMPACT_DTYPES)}")
        if self.compact_file:
            kind = compact_kind(self.compact_file)
            if kind == "tfrecord" and self.compact_dtype != "float32":
                raise ValueError("TFRecord float lists are float32: --compact_dtype=float16 "
                                 "needs a .npz --compact_file")
        elif self.pooling != "none":
            raise ValueError("--pooling applies to --compact_file, which is not set")


def compact_kind(path):
    if path.endswith(".npz"):
        return "npz"
    if path.endswith((".tfrecord", ".tf_record", ".tfrecords")):
        return "tfrecord"
    raise ValueError(f"--compact_file {path}: name it *.npz or *.tfrecord")


# --------------------------------------------------------------------------- input
@dataclasses.dataclass
class Example:
    unique_id: int
    tokens: list
    input_ids: list
    segment_ids: list


def read_lines(path):
    """(line index, text_a, text_b or None) for every line, as google-research reads them:
    stripped, split at the last " ||| ". Lines split on \\n only."""
    from bert_tf.tokenization import convert_to_unicode
    with fileio.open_binary(path) as f:
        for index, raw in enumerate(f):
            try:
                line = convert_to_unicode(raw).strip()
            except UnicodeDecodeError as e:
                raise ValueError(f"{path}:{index + 1}: not UTF-8 ({e})") from None
            yield (index, *split_pair(line))


def has_text(path):
    """Whether a line of `path` holds more than whitespace (reads up to the first that does)."""
    with fileio.open_binary(path) as f:
        return any(line.strip() for line in f)


def split_pair(line):
    """(text_a, text_b or None): `line` split at its last " ||| ", as google-research does."""
    m = _PAIR_RE.match(line)
    return (line, None) if m is None else (m.group(1), m.group(2))


def count_lines(path):
    count, last = 0, b"\n"
    with fileio.open_binary(path) as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            count += block.count(b"\n")
            last = block[-1:]
    return count + (last != b"\n")


def pack(tokens_a, tokens_b, max_seq_length):
    """google-research's packing: (tokens, segment_ids) of [CLS] a [SEP] (b [SEP]), pairs
    truncated by dropping the last token of the longer side (the second on ties), single texts
    cut to max_seq_length - 2."""
    from bert_tf.data.swag.features import truncate_pair
    if tokens_b:
        keep_a, keep_b = truncate_pair(tokens_a, tokens_b, max_seq_length - 3)
        tokens_a, tokens_b = tokens_a[:keep_a], tokens_b[:keep_b]
    else:
        tokens_a = tokens_a[:max_seq_length - 2]
    tokens = ["[CLS]"] + tokens_a + ["[SEP]"]
    segment_ids = [0] * len(tokens)
    if tokens_b:
        tokens += tokens_b + ["[SEP]"]
        segment_ids += [1] * (len(tokens_b) + 1)
    return tokens, segment_ids


def encode_example(tokenizer, unique_id, text_a, text_b, max_seq_length):
    """The Example of one input line, tokenized and packed."""
    tokens, segment_ids = pack(tokenizer.tokenize(text_a),
                               tokenizer.tokenize(text_b) if text_b else None, max_seq_length)
    return Example(unique_id, tokens, tokenizer.convert_tokens_to_ids(tokens), segment_ids)


def pad_batch(examples):
    """int32 input_ids, input_mask, segment_ids [B, longest] of examples with .input_ids and
    .segment_ids."""
    longest = max(len(e.input_ids) for e in examples)
    shape = (len(examples), longest)
    arrays = {"input_ids": np.zeros(shape, np.int32), "input_mask": np.zeros(shape, np.int32),
              "segment_ids": np.zeros(shape, np.int32)}
    for i, e in enumerate(examples):
        n = len(e.input_ids)
        arrays["input_ids"][i, :n] = e.input_ids
        arrays["input_mask"][i, :n] = 1
        arrays["segment_ids"][i, :n] = e.segment_ids
    return arrays


# --------------------------------------------------------------------------- model
def make_feature_fn(encoder, layer_indexes, pooling="none"):
    """tf.function: int32 [B, S] x3 -> {"layers": [k, B, S, H], "pooled": [B, D]} float32;
    "pooled" is the pooler output, or with pooling "cls"/"mean" the --layers' token vectors
    concatenated [B, S, k*H] and pooled over the real tokens by pool_tokens, in the graph."""
    import tensorflow as tf

    from bert_tf.model.sentence_pooling import pool_tokens
    spec = tf.TensorSpec([None, None], tf.int32)

    @tf.function(input_signature=[spec, spec, spec], autograph=False)
    def features(input_ids, input_mask, segment_ids):
        out = encoder({"input_ids": input_ids, "input_mask": input_mask,
                       "segment_ids": segment_ids}, training=False)
        layers = [tf.cast(out["encoder_outputs"][i], tf.float32) for i in layer_indexes]
        pooled = (pool_tokens(tf.concat(layers, axis=-1), input_mask, pooling)
                  if pooling in ("cls", "mean") else tf.cast(out["pooled_output"], tf.float32))
        return {"layers": tf.stack(layers), "pooled": pooled}
    return features


def json_line(example, layer_outputs, layer_indexes):
    """google-research's JSON line for one example; layer_outputs [k, S, H] (S >= tokens)."""
    features = []
    for i, token in enumerate(example.tokens):
        layers = [{"index": index, "values": [round(x, 6) for x in layer_outputs[j, i].tolist()]}
                  for j, index in enumerate(layer_indexes)]
        features.append({"token": token, "layers": layers})
    return json.dumps({"linex_index": example.unique_id, "features": features}) + "\n"


def compact_row(example, layer_outputs, pooled, pooling):
    """[D] (`pooled`, make_feature_fn's for every pooling but "none") or [T, D] (pooling
    "none": the --layers concatenated per token) float32."""
    if pooling != "none":
        return pooled
    return np.concatenate(list(layer_outputs[:, :len(example.tokens)]), axis=-1)  # [T, k*H]


# --------------------------------------------------------------------------- output
class _Outputs:
    """Append-only partial outputs with commit points, and their final assembly."""

    def __init__(self, opts, layer_indexes, fingerprint):
        self.opts = opts
        self.layer_indexes = layer_indexes
        base = opts.output_file or opts.compact_file
        self.state_path = base + ".progress.json"
        self.fingerprint = fingerprint
        self.jsonl = opts.output_file + ".partial" if opts.output_file else None
        self.kind = compact_kind(opts.compact_file) if opts.compact_file else None
        self.compact_dir = opts.compact_file + ".partial.d" if self.kind == "npz" else None
        self.tfrecord = opts.compact_file + ".partial" if self.kind == "tfrecord" else None
        self.files, self.chunk_writer, self.chunk_path = {}, None, None
        self.lines_done = self._resume()

    # -- files being appended to
    def _paths(self):
        paths = []
        if self.jsonl:
            paths.append(self.jsonl)
        if self.tfrecord:
            paths.append(self.tfrecord)
        if self.compact_dir:
            paths += [os.path.join(self.compact_dir, f"{name}.bin") for name in
                      ("features", "linex_index", "num_tokens", "input_ids")]
        return paths

    def _resume(self):
        state = None
        if os.path.exists(self.state_path):
            with open(self.state_path, encoding="utf-8") as f:
                state = json.load(f)
            if state.get("fingerprint") != self.fingerprint:
                logger.warning("%s was made by a run with other inputs or settings: starting "
                               "over", self.state_path)
                state = None
            elif not all(os.path.exists(p) and os.path.getsize(p) >= state["sizes"].get(p, 0)
                         for p in self._paths()):
                logger.warning("partial outputs of %s are missing: starting over",
                               self.state_path)
                state = None
        if self.compact_dir:
            os.makedirs(self.compact_dir, exist_ok=True)
        if self.tfrecord and os.path.exists(self.tfrecord + ".chunk"):
            os.remove(self.tfrecord + ".chunk")          # records of an uncommitted chunk
        for path in self._paths():
            handle = open(path, "r+b" if state and os.path.exists(path) else "wb")
            handle.truncate(state["sizes"].get(path, 0) if state else 0)
            handle.seek(0, os.SEEK_END)
            self.files[path] = handle
        done = state["lines_done"] if state else 0
        if done:
            logger.info("resuming after line %d (%s)", done, self.state_path)
        return done

    def commit(self, lines_done):
        """Makes everything written so far durable and records it as done."""
        if self.chunk_writer is not None:
            self.chunk_writer.close()
            self.chunk_writer = None
            with open(self.chunk_path, "rb") as src:
                shutil.copyfileobj(src, self.files[self.tfrecord], 1 << 20)
            os.remove(self.chunk_path)
        sizes = {}
        for path, handle in self.files.items():
            handle.flush()
            os.fsync(handle.fileno())
            sizes[path] = handle.tell()
        fileio.atomic_write_text(self.state_path, json.dumps(
            {"fingerprint": self.fingerprint, "lines_done": lines_done, "sizes": sizes}))
        self.lines_done = lines_done

    # -- writing
    def write(self, example, layer_outputs, pooled):
        if self.jsonl:
            self.files[self.jsonl].write(
                json_line(example, layer_outputs, self.layer_indexes).encode("utf-8"))
        if self.kind is None:
            return
        row = compact_row(example, layer_outputs, pooled, self.opts.pooling)
        if self.kind == "tfrecord":
            self._write_record(example, row)
            return
        folder = self.compact_dir
        self.files[os.path.join(folder, "features.bin")].write(
            np.ascontiguousarray(row, self.opts.compact_dtype).tobytes())
        self.files[os.path.join(folder, "linex_index.bin")].write(
            np.int64(example.unique_id).tobytes())
        if self.opts.pooling == "none":
            self.files[os.path.join(folder, "num_tokens.bin")].write(
                np.int64(len(example.tokens)).tobytes())
            self.files[os.path.join(folder, "input_ids.bin")].write(
                np.asarray(example.input_ids, np.int32).tobytes())

    def _write_record(self, example, row):
        import tensorflow as tf
        if self.chunk_writer is None:
            self.chunk_path = self.tfrecord + ".chunk"
            self.chunk_writer = tf.io.TFRecordWriter(self.chunk_path)
        feature = {
            "linex_index": tf.train.Feature(int64_list=tf.train.Int64List(
                value=[example.unique_id])),
            "shape": tf.train.Feature(int64_list=tf.train.Int64List(value=list(row.shape))),
            "features": tf.train.Feature(float_list=tf.train.FloatList(
                value=np.asarray(row, np.float32).ravel())),
        }
        if self.opts.pooling == "none":
            feature["tokens"] = tf.train.Feature(bytes_list=tf.train.BytesList(
                value=[t.encode("utf-8") for t in example.tokens]))
            feature["input_ids"] = tf.train.Feature(int64_list=tf.train.Int64List(
                value=example.input_ids))
        record = tf.train.Example(features=tf.train.Features(feature=feature))
        self.chunk_writer.write(record.SerializeToString())

    # -- the end
    def finish(self, feature_size):
        for handle in self.files.values():
            handle.close()
        if self.jsonl:
            os.replace(self.jsonl, self.opts.output_file)
        if self.tfrecord:
            os.replace(self.tfrecord, self.opts.compact_file)
        if self.compact_dir:
            self._assemble_npz(feature_size)
            shutil.rmtree(self.compact_dir)
        os.remove(self.state_path)

    def _assemble_npz(self, feature_size):
        folder = self.compact_dir
        raw = lambda name: os.path.join(folder, f"{name}.bin")  # noqa: E731
        dtype = np.dtype(self.opts.compact_dtype)
        n = os.path.getsize(raw("linex_index")) // 8
        rows = os.path.getsize(raw("features")) // (dtype.itemsize * max(feature_size, 1))
        arrays = [("features", dtype, (rows, feature_size), raw("features")),
                  ("linex_index", np.dtype(np.int64), (n,), raw("linex_index"))]
        extra = {"layers": np.asarray(self.layer_indexes, np.int64)}
        if self.opts.pooling == "none":
            counts = np.fromfile(raw("num_tokens"), np.int64)
            extra["row_splits"] = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
            arrays.append(("input_ids", np.dtype(np.int32), (rows,), raw("input_ids")))
        with fileio.atomic_path(self.opts.compact_file) as tmp:
            with zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
                for name, array_dtype, shape, path in arrays:
                    with zf.open(f"{name}.npy", "w", force_zip64=True) as f:
                        np.lib.format.write_array_header_2_0(f, {
                            "descr": np.lib.format.dtype_to_descr(array_dtype),
                            "fortran_order": False, "shape": shape})
                        with open(path, "rb") as src:
                            shutil.copyfileobj(src, f, 1 << 20)
                for name, value in extra.items():
                    with zf.open(f"{name}.npy", "w", force_zip64=True) as f:
                        np.lib.format.write_array(f, value)


def _fingerprint(opts):
    import tensorflow as tf
    stat = tf.io.gfile.stat(opts.input_file)
    fields = dataclasses.asdict(opts)
    fields["config"] = opts.config.to_dict()
    for name in ("commit_every", "export_dir"):      # they do not change the features
        fields.pop(name)
    fields["input"] = [os.path.abspath(opts.input_file) if not fileio.is_url(opts.input_file)
                       else opts.input_file, stat.length, stat.mtime_nsec]
    return json.loads(json.dumps(fields, sort_keys=True, default=str))


# --------------------------------------------------------------------------- the job
def load_encoder_for(opts):
    """The encoder with --init_checkpoint's weights (heads in the checkpoint are ignored)."""
    from bert_tf.checkpoints import load_weights
    from bert_tf.model import BertEncoder
    encoder = BertEncoder(opts.config)
    report = load_weights(encoder, opts.init_checkpoint)
    logger.info("init_checkpoint: %s", report.summary().splitlines()[0])
    return encoder


def run(opts, strategy=None):
    """Extracts features of every input line, then exports the encoder with --export_dir;
    returns {"lines", "output_file", "compact_file", "seconds", "export"}."""
    import tensorflow as tf

    opts.resolve_vocab_file()
    opts.validate()
    layer_indexes = opts.layer_indexes()
    tokenizer = load_tokenizer(opts)
    with (strategy or tf.distribute.get_strategy()).scope():
        encoder = load_encoder_for(opts)
    feature_fn = make_feature_fn(encoder, layer_indexes, opts.pooling)
    total = count_lines(opts.input_file)
    outputs = _Outputs(opts, layer_indexes, _fingerprint(opts))
    hidden = opts.config.hidden_size
    feature_size = hidden if opts.pooling == "pooler" else hidden * len(layer_indexes)
    logger.info("extracting layers %s of %d lines (%s) -> %s", layer_indexes, total,
                opts.input_file, ", ".join(p for p in (opts.output_file, opts.compact_file)
                                           if p))
    start = last_log = time.perf_counter()
    done = first = outputs.lines_done
    batch = []
    pairs = False

    def flush():
        nonlocal done
        arrays = pad_batch(batch)
        result = feature_fn(arrays["input_ids"], arrays["input_mask"], arrays["segment_ids"])
        layers, pooled = result["layers"].numpy(), result["pooled"].numpy()
        for b, example in enumerate(batch):
            outputs.write(example, layers[:, b], pooled[b])
        done += len(batch)
        batch.clear()

    for index, text_a, text_b in read_lines(opts.input_file):
        pairs = pairs or text_b is not None
        if index < first:
            continue
        batch.append(encode_example(tokenizer, index, text_a, text_b, opts.max_seq_length))
        if index < 2:
            logger.info("line %d tokens: %s", index, " ".join(batch[-1].tokens))
        if len(batch) == opts.batch_size:
            flush()
            if done - outputs.lines_done >= opts.commit_every:
                outputs.commit(done)
            now = time.perf_counter()
            if now - last_log > 30:
                rate = (done - first) / (now - start)
                logger.info("%d/%d lines, %.1f lines/s, eta %.0f s", done, total, rate,
                            (total - done) / max(rate, 1e-9))
                last_log = now
    if batch:
        flush()
    outputs.commit(done)
    outputs.finish(feature_size)
    seconds = time.perf_counter() - start
    logger.info("wrote %d lines (%d this run) in %.1f s", done, done - first, seconds)
    # The served encoder takes text_b when the input had `a ||| b` lines.
    return {"lines": done, "output_file": opts.output_file, "compact_file": opts.compact_file,
            "seconds": seconds,
            "export": export_model(opts, encoder, opts.contract(text_pair=pairs))}
