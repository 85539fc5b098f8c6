"""export(): a task model -> `<export_dir>/<version>/` as TensorFlow Serving loads it, or as a
LiteRT or ONNX file (ExportSettings.format; bert_tf.serving.portable).

The version is written to a hidden staging folder inside export_dir (TF Serving only looks at
numeric names) and renamed into place when complete, so a server polling export_dir never
sees a half-written version and a failed export leaves nothing behind. export_dir may be a URL
(gs://...: TF Serving polls those too); see _staging for what differs there.
"""

import contextlib
import json
import logging
import os
import shutil
import tempfile
import time
from typing import TYPE_CHECKING

import tensorflow as tf

from bert_tf import cpu_features, fileio
from bert_tf.model import int8
from bert_tf.model.precision import with_dtype_policy
from bert_tf import names
from bert_tf.serving.module import ServingModule
from bert_tf.serving.padding import length_buckets
from bert_tf.serving.heads import make_head
from bert_tf.contract import InferenceContract
from bert_tf.serving.options import PRECISIONS, ExportSettings
from bert_tf.serving.int8_check import Int8WeightCheck
from bert_tf.serving.warmup import warmup_requests, write_warmup
from bert_tf.tokenization import vocab as _vocab
from bert_tf.tokenization.serving_ops import MIN_TF_SERVING_VERSION_INT8

if TYPE_CHECKING:
    import keras

logger = logging.getLogger("bert_tf")

def check_compute_options(kind: str, precision: str | None, jit_compile: bool,
                          flags: tuple[str, str] = ("precision", "jit_compile")) -> None:
    """Raises ValueError (naming `flags`) for a precision export() lacks, XLA with int8, or XLA
    for fill_mask, whose [MASK] positions have data-dependent shapes XLA cannot compile."""
    if precision not in PRECISIONS:
        raise ValueError(f"{flags[0]} must be one of {', '.join(p for p in PRECISIONS if p)}, "
                         f"got {precision!r}")
    if jit_compile and PRECISIONS[precision].int8:
        raise ValueError(f"{flags[1]} does not combine with {flags[0]} {precision}: XLA has no "
                         "kernel for oneDNN's int8 matmul")
    if jit_compile and kind == "fill_mask":
        raise ValueError(f"{flags[1]} is not supported for task fill_mask: its [MASK] "
                         "positions have data-dependent shapes, which XLA cannot compile")


def check_export_options(fmt: str, kind: str, precision: str | None, jit_compile: bool,
                         flags: tuple[str, str, str] = ("format", "precision", "jit_compile")
                         ) -> None:
    """check_compute_options for a SavedModel, portable.check_portable_options for the LiteRT
    and ONNX formats; ValueError (naming `flags`) for another format."""
    if fmt == "saved_model":
        return check_compute_options(kind, precision, jit_compile, flags[1:])
    from bert_tf.serving import portable
    if fmt not in portable.FILES:
        raise ValueError(f"{flags[0]} must be saved_model, {', '.join(portable.FILES)}, got "
                         f"{fmt!r}")
    portable.check_portable_options(fmt, kind, precision, jit_compile, flags)


# A MiniLM classifier's bf16 export served MRPC dev pairs at 0.38x the examples/s of its fp32
# one on a 2-core Xeon with AVX-512 VNNI but no BF16 or AMX (issue 81), and SST-2 at 0.27x with
# oneDNN capped to AVX512_CORE_VNNI (benchmarks/results/serving_cost_vnni.jsonl), 2026-12-06.
EMULATED_BF16_SPEED = "0.27-0.38x"


def bf16_advice(precision: str | None) -> str | None:
    """The warning for a bfloat16 export made on a CPU without bfloat16 instructions (oneDNN
    then emulates them, slower than float32), else None. The export machine is often not the
    serving machine, so this warns and does not refuse."""
    compute = PRECISIONS.get(precision)
    if compute is None or "bfloat16" not in (compute.dtype_policy, compute.attention_dtype):
        return None
    if cpu_features.native_bf16() is not False:
        return None
    instead = "int8" if compute.int8 else "int8 (x86-64 with AVX-512 VNNI) or fp32"
    return (f"precision {precision}: this CPU ({cpu_features.cpu_model()}) has no bfloat16 "
            f"instructions ({', '.join(cpu_features.BF16_FLAGS)}), so oneDNN emulates them: "
            f"on such a CPU a bf16 MiniLM classifier served {EMULATED_BF16_SPEED} fp32's "
            f"examples/s. If the serving machine is like this one, export {instead}")


def check_variables_saved(signatures, saved) -> None:
    """Raises RuntimeError when a signature reads a variable that the SavedModel does not save
    as itself: TensorFlow's session loader (tensorflow_model_server's) restores only saved
    variables, so such a variable would be uninitialised on the first request."""
    saved = {id(v) for v in saved}
    missing = sorted({v.name for fn in signatures.values() for v in fn.variables
                      if id(v) not in saved})
    if missing:
        raise RuntimeError(f"the signatures read {len(missing)} variables the export would not "
                           f"save, e.g. {missing[:3]}: tensorflow_model_server could not serve it")


def existing_versions(export_dir: str | os.PathLike) -> list[int]:
    """Numeric version folders already in export_dir (local or URL), ascending."""
    export_dir = str(export_dir)
    if not tf.io.gfile.isdir(export_dir):
        return []
    names = (n.rstrip("/") for n in tf.io.gfile.listdir(export_dir))   # GCS lists "1/"
    return sorted(int(n) for n in names
                  if n.isdigit() and tf.io.gfile.isdir(os.path.join(export_dir, n)))


def next_version(export_dir: str | os.PathLike) -> int:
    """1 for a new export_dir, else one more than its highest numeric version."""
    versions = existing_versions(export_dir)
    return versions[-1] + 1 if versions else 1


@contextlib.contextmanager
def _staging(export_dir, version, last="saved_model.pb"):
    """Yields a local folder to write the version in; it becomes export_dir/<version> on
    success and is removed on failure.

    Local export_dir: a hidden folder inside it, renamed into place atomically. URL: a local
    temporary folder, published with fileio.publish_dir: uploaded into a hidden folder under
    export_dir, then renamed in file by file with saved_model.pb last. Object stores cannot
    rename a folder atomically, so a server polling at that moment may list the version while
    the renames (quick, server-side, after every upload) are still running; without
    saved_model.pb its load fails cleanly and TF Serving retries, rather than loading a partial
    version.
    """
    if fileio.is_url(export_dir):
        local = tempfile.mkdtemp(prefix=f"bert_tf-export-{version}-")
        try:
            yield local
            fileio.publish_dir(local, f"{export_dir}/{version}", last=(last,))
        finally:
            shutil.rmtree(local, ignore_errors=True)
        return
    final = os.path.join(export_dir, str(version))
    os.makedirs(export_dir, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=f".tmp-export-{version}-", dir=export_dir)
    try:
        yield staging
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(staging, 0o777 & ~umask)                # mkdtemp makes 0700
        os.rename(staging, final)            # fails if a non-empty `final` appeared meanwhile
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def export(model: "keras.Model", kind: str, export_dir: str | os.PathLike,
           vocab_file: str | os.PathLike, do_lower_case: bool, seq_length: int,
           head: InferenceContract | None = None, settings: ExportSettings | None = None) -> str:
    """Exports `model` for TensorFlow Serving (or LiteRT, MediaPipe or ONNX: settings.format);
    returns the path of the new version folder.

    Args:
      model: the bert_tf model of `kind`: BertClassifier ("classifier"; "regression" with
        num_classes == 1; "multi_label" when trained with run_classifier --multi_label),
        BertSpanLabeler ("squad"), BertTokenClassifier ("tagger"), BertMultipleChoice
        ("multiple_choice"), BertPretrainer with its masked-LM head ("fill_mask"), BertEmbedder
        ("embedding"), or BertEncoder / any task model ("encoder": its encoder).
        Mixed-precision models export float32 outputs.
      kind: a bert_tf.kinds name, one of kinds.SERVED.
      export_dir: folder or URL (gs://...) holding numeric versions (TF Serving's
        --model_base_path).
      vocab_file, do_lower_case, seq_length: the model's WordPiece vocabulary (copied to
        assets/vocab.txt), casing, and the max_seq_length of the raw-text and serve_examples
        signatures (longer texts are truncated as run_classifier truncates them; SQuAD reads a
        long context in windows of this length, as run_squad does).
      head: the rest of the model's InferenceContract (labels, text pairs, SQuAD limits,
        windows, ...; bert_tf.contract; HeadOptions is its former name).
      settings: format, precision, XLA, version, warm-up requests, raw-text signatures
        (bert_tf.serving.options.ExportSettings).
    """
    contract = contract_of(kind, do_lower_case, seq_length, head)
    settings = settings or ExportSettings()
    export_dir = normalized_dir(export_dir)
    vocab = check_export(model, contract, settings, vocab_file)
    version = choose_version(export_dir, settings.version)
    started = time.time()
    if settings.format == "saved_model":
        with _staging(export_dir, version) as staging:
            write_saved_model(model, contract, staging, vocab_file, vocab, settings)
    else:
        from bert_tf.serving import portable
        with _staging(export_dir, version, portable.FILES[settings.format]) as staging:
            portable.write_portable(model, contract, staging, vocab_file, vocab, settings)
    path = os.path.join(export_dir, str(version))
    logger.info("exported %s in %.1fs", path, time.time() - started)
    return path


def contract_of(kind, do_lower_case, seq_length, head=None):
    """The InferenceContract of an export: `head` with the kind, casing and length given."""
    head = head or InferenceContract()
    if head.kind not in (None, kind):
        raise ValueError(f"the contract is for a {head.kind} model, not {kind!r}")
    return head.replace(kind=kind, do_lower_case=bool(do_lower_case),
                        max_seq_length=int(seq_length))


def normalized_dir(export_dir):
    return (str(export_dir).rstrip("/") if fileio.is_url(export_dir)
            else os.path.abspath(os.fspath(export_dir)))


def check_export(model, contract, settings, vocab_file):
    """Checks that the model, contract, settings and vocabulary fit together; returns the
    Vocabulary."""
    config = getattr(model, "config", None)
    if config is None:
        raise ValueError(f"cannot export {type(model).__name__}: not a bert_tf model")
    check_export_options(settings.format, contract.kind, settings.precision,
                         settings.jit_compile)
    if not 2 <= contract.max_seq_length <= config.max_position_embeddings:
        raise ValueError(f"seq_length={contract.max_seq_length} must be in [2, "
                         f"max_position_embeddings = {config.max_position_embeddings}]")
    vocab = _vocab.Vocabulary.from_file(vocab_file)
    if len(vocab) > config.vocab_size:
        raise ValueError(f"{vocab_file}: {len(vocab)} tokens, more than the model's vocab_size "
                         f"({config.vocab_size}): wrong vocabulary for this model")
    return vocab


def choose_version(export_dir, version=None):
    """`version`, or the next free number; never one that exists."""
    if version is None:
        version = next_version(export_dir)
    elif isinstance(version, bool) or not isinstance(version, int) or version < 0:
        raise ValueError(f"version must be a non-negative integer, got {version!r}")
    if fileio.exists(os.path.join(export_dir, str(version))):
        raise FileExistsError(f"{export_dir}/{version} already exists: versions are never "
                              "overwritten (leave version=None for the next free number)")
    return version


def compute_copy(model, precision, jit_compile):
    """The copy of `model` the export computes with: `precision`'s dtype or int8 layers
    (bert_tf.model.int8). Without XLA the copy's encoder skips padding."""
    compute = PRECISIONS[precision]
    if compute.int8:
        return int8.int8_model(model, skip_padding=not jit_compile,
                               attention_dtype=compute.attention_dtype)
    return with_dtype_policy(model, compute.dtype_policy or model.dtype_policy, not jit_compile)


def length_buckets_of(contract, config, jit_compile):
    """Under XLA, the lengths a batch is padded to (each new shape compiles once); without it
    none: each batch is cut to its longest row and the encoder skips what padding is left."""
    if not jit_compile:
        return []
    return sorted(set(length_buckets(contract.max_seq_length))
                  | set(length_buckets(config.max_position_embeddings)))


def write_saved_model(model, contract, folder, vocab_file, vocab, settings):
    """Writes the SavedModel of `model` into local `folder`: the module and its signatures,
    the warm-up requests and export_info.json."""
    advice = bf16_advice(settings.precision)
    if advice:
        logger.warning(advice)
    copy = compute_copy(model, settings.precision, settings.jit_compile)
    head = make_head(contract.kind, copy, vocab.id_to_token, contract.do_lower_case,
                     contract.max_seq_length, contract)
    buckets = length_buckets_of(contract, model.config, settings.jit_compile)
    module = ServingModule(head, model.config, buckets, jit_compile=settings.jit_compile)
    if PRECISIONS[settings.precision].int8 and int8.weight_levels() == 127:
        module.int8_check = Int8WeightCheck()      # loading fails where 8 bits saturate
    signatures = module.signatures(text=settings.text_signatures)
    check_variables_saved(signatures, head.model_variables)
    logger.info("exporting %s model (seq_length %d, %s, %s, signatures %s)", contract.kind,
                contract.max_seq_length, copy.dtype_policy.name,
                "XLA" if settings.jit_compile else "no XLA", ", ".join(sorted(signatures)))
    tf.saved_model.save(module, folder, signatures=signatures)
    if not os.path.exists(os.path.join(folder, "assets", names.VOCAB_ASSET)):
        raise RuntimeError(f"export is missing assets/{names.VOCAB_ASSET}")
    extra = os.path.join(folder, names.ASSETS_EXTRA)
    if settings.warmup:
        lengths = [b for b in buckets if b <= contract.max_seq_length]
        count = write_warmup(os.path.join(extra, names.WARMUP_FILE),
                             warmup_requests(head, text=settings.text_signatures,
                                             lengths=lengths))
        logger.info("wrote %d warm-up requests", count)
    write_info(extra, head, contract, settings, signatures, buckets)


def write_info(folder, head, contract, settings, signatures, buckets):
    """Writes export_info.json: the model's contract (as the head records it) and what the
    export did (signatures, dtype policy, XLA buckets, int8, TensorFlow's version)."""
    info = dict(head.info(), signatures=sorted(signatures),
                do_lower_case=bool(contract.do_lower_case),
                dtype_policy=head.model.dtype_policy.name,
                jit_compile=bool(settings.jit_compile), length_buckets=buckets,
                tensorflow=tf.__version__)
    compute = PRECISIONS[settings.precision]
    if compute.int8:
        info.update(quantized="int8", min_tf_serving_version=MIN_TF_SERVING_VERSION_INT8,
                    attention_dtype=compute.attention_dtype or "float32",
                    # 63 (7 bits) where the exporting CPU has no int8 dot products;
                    # 127 needs them (int8_check).
                    int8_weight_levels=int8.weight_levels())
    os.makedirs(folder, exist_ok=True)
    fileio.atomic_write_text(os.path.join(folder, names.EXPORT_INFO),
                             json.dumps(info, indent=2) + "\n")
