"""bert_tf.serving.export and export_savedmodel.py: the TF Serving layout, version numbering,
atomic writes, the documented signatures (as saved_model_cli shows them), float32 outputs for
mixed-precision models, and clear errors for inconsistent arguments."""

import json
import os
import re
import sys
import sysconfig

import keras
import numpy as np
import pytest
import tensorflow as tf
from tensorflow.core.framework import types_pb2

import test_serving_support as support
from helpers import export_savedmodel
from bert_tf import processes, serving
from bert_tf.serving import exporter
from bert_tf.serving import graph_ops

S, F, I, I64, B = "DT_STRING", "DT_FLOAT", "DT_INT32", "DT_INT64", "DT_BOOL"
FEATURE_INPUTS = {k: (I, "(-1, -1)") for k in ("input_ids", "input_mask", "segment_ids")}
EXAMPLE_INPUTS = {"examples": (S, "(-1)")}


def _three(text_inputs, text_outputs, feature_outputs, example_outputs=None):
    return {"serving_default": {"inputs": text_inputs, "outputs": text_outputs},
            "serve_features": {"inputs": FEATURE_INPUTS, "outputs": feature_outputs},
            "serve_examples": {"inputs": EXAMPLE_INPUTS,
                               "outputs": example_outputs or feature_outputs}}


_CLASSIFIER_OUT = {"probabilities": (F, "(-1, 2)"), "logits": (F, "(-1, 2)"),
                   "label_id": (I, "(-1)"), "label": (S, "(-1)")}
_SPAN = {"answer_token_start": (I, "(-1)"), "answer_token_end": (I, "(-1)"),
         "score": (F, "(-1)")}
_TAGGER = lambda s: {"logits": (F, f"({s}, 9)"), "probabilities": (F, f"({s}, 9)"),
                     "label_id": (I, f"({s})"), "label": (S, f"({s})")}
_CHOICE_OUT = {"probabilities": (F, "(-1, 4)"), "logits": (F, "(-1, 4)"), "choice": (I, "(-1)")}
_FILL_OUT = {"tokens": (S, "(-1, -1, 5)"), "token_ids": (I, "(-1, -1, 5)"),
             "probabilities": (F, "(-1, -1, 5)"), "mask_positions": (I, "(-1, -1)"),
             "num_masks": (I, "(-1)")}
# The signatures docs/serving.md documents, for the test models (S=64, SQuAD S=128, H=32, C=2/9,
# multiple choice N=4, fill-mask top_k=5).
DOCUMENTED = {
    "classifier": _three({"text_a": (S, "(-1)"), "text_b": (S, "(-1)")}, _CLASSIFIER_OUT,
                         _CLASSIFIER_OUT),
    "regression": _three({"text_a": (S, "(-1)"), "text_b": (S, "(-1)")},
                         {"score": (F, "(-1)")}, {"score": (F, "(-1)")}),
    "squad": _three(
        {"question": (S, "(-1)"), "context": (S, "(-1)")},
        dict(_SPAN, answer_text=(S, "(-1)"), answer_start=(I64, "(-1)"),
             answer_end=(I64, "(-1)"), answer_window=(I, "(-1)"), null_score=(F, "(-1)"),
             num_windows=(I, "(-1)")),
        dict(_SPAN, start_logits=(F, "(-1, -1)"), end_logits=(F, "(-1, -1)")),
        dict(_SPAN, start_logits=(F, "(-1, 128)"), end_logits=(F, "(-1, 128)"),
             unique_ids=(I64, "(-1)"))),
    "tagger": _three({"text_a": (S, "(-1)")},
                     dict(_TAGGER("-1, 64"), tokens=(S, "(-1, 64)"),
                          token_start_offsets=(I64, "(-1, 64)"),
                          token_end_offsets=(I64, "(-1, 64)")),
                     _TAGGER("-1, -1"), _TAGGER("-1, 64")),
    "encoder": _three({"text_a": (S, "(-1)")},
                      {"pooled_output": (F, "(-1, 32)"), "sequence_output": (F, "(-1, 64, 32)"),
                       "input_mask": (I, "(-1, 64)")},
                      {"pooled_output": (F, "(-1, 32)"), "sequence_output": (F, "(-1, -1, 32)")},
                      {"pooled_output": (F, "(-1, 32)"),
                       "sequence_output": (F, "(-1, 64, 32)")}),
    "embedding": _three({"text_a": (S, "(-1)")}, {"embedding": (F, "(-1, 32)")},
                        {"embedding": (F, "(-1, 32)")}),
    "multiple_choice": {
        "serving_default": {"inputs": {"context": (S, "(-1)"), "endings": (S, "(-1, 4)")},
                            "outputs": _CHOICE_OUT},
        "serve_features": {"inputs": {k: (I, "(-1, 4, -1)") for k in FEATURE_INPUTS},
                           "outputs": _CHOICE_OUT},
        "serve_examples": {"inputs": EXAMPLE_INPUTS, "outputs": _CHOICE_OUT}},
    "fill_mask": _three({"text": (S, "(-1)")},
                        dict(_FILL_OUT, mask_start_offsets=(I64, "(-1, -1)"),
                             mask_end_offsets=(I64, "(-1, -1)"), masks_truncated=(B, "(-1)")),
                        _FILL_OUT),
}


def _from_cli(text):
    """{signature: {"inputs"|"outputs": {name: (dtype, shape)}}} from saved_model_cli output."""
    table, signature, side, name = {}, None, None, None
    for line in text.splitlines():
        line = line.strip()
        if m := re.match(r"signature_def\['(.+)'\]:", line):
            signature = m.group(1)
            table[signature] = {"inputs": {}, "outputs": {}}
        elif m := re.match(r"(inputs|outputs)\['(.+)'\] tensor_info:", line):
            side, name = m.groups()
        elif m := re.match(r"dtype: (\w+)", line):
            dtype = m.group(1)
        elif m := re.match(r"shape: (.+)", line):
            table[signature][side][name] = (dtype, m.group(1))
    return table


def _from_proto(path):
    """The same table read from saved_model.pb."""
    meta_graph = graph_ops.read_saved_model(path).meta_graphs[0]

    def shape(info):
        return "(" + ", ".join(str(d.size) for d in info.tensor_shape.dim) + ")"

    return {name: {side: {k: (types_pb2.DataType.Name(v.dtype), shape(v))
                          for k, v in getattr(sig, side).items()}
                   for side in ("inputs", "outputs")}
            for name, sig in meta_graph.signature_def.items() if not name.startswith("__")}


def _assert_documented(table, kind):
    assert sorted(table) == sorted(DOCUMENTED[kind]), kind
    for signature, sides in DOCUMENTED[kind].items():
        for side, expected in sides.items():
            assert table[signature][side] == expected, (kind, signature, side)


def test_saved_model_cli_lists_the_documented_signatures():
    """TensorFlow's own saved_model_cli script, started as a process of its own (forked from an
    interpreter that has imported TensorFlow: the script's code and output are the same)."""
    script = os.path.join(sysconfig.get_path("scripts"), "saved_model_cli")
    out = processes.run([sys.executable, script, "show", "--all", "--dir",
                         support.exported("squad")[1]], capture_output=True, text=True,
                        timeout=600, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    assert out.returncode == 0, out.stderr[-3000:]
    table = _from_cli(out.stdout)
    table.pop("__saved_model_init_op", None)
    _assert_documented(table, "squad")
    assert "args_0" not in out.stdout


# Slow whatever the profile says: the export of each kind is a process-wide cache, built by
# whichever test asks for it first (see test_export_writes_the_tf_serving_layout).
@pytest.mark.slow
@pytest.mark.parametrize("kind", ["classifier", "regression", "tagger", "encoder",
                                  "multiple_choice", "fill_mask", "embedding"])
def test_every_task_has_the_documented_signatures(kind):
    """The table saved_model_cli prints, read from saved_model.pb directly."""
    _assert_documented(_from_proto(support.exported(kind)[1]), kind)


# Slow whatever the profile says: when it runs first in its worker, it builds the shared export
# it reads (a process-wide cache, not a fixture, so the profile cannot see that cost).
@pytest.mark.slow
def test_export_writes_the_tf_serving_layout():
    path = support.exported("classifier")[1]
    export_dir = os.path.dirname(path)
    assert os.path.basename(path) == "1"
    assert os.listdir(export_dir) == ["1"], "no staging folder may remain"
    for rel in ("saved_model.pb", "variables/variables.index", "assets/vocab.txt",
                "assets.extra/tf_serving_warmup_requests", "assets.extra/export_info.json"):
        assert os.path.isfile(os.path.join(path, rel)), rel
    with open(os.path.join(path, "assets", "vocab.txt"), "rb") as f, \
            open(support.vocab_file(), "rb") as g:
        assert f.read() == g.read()
    with open(os.path.join(path, "assets.extra", "export_info.json")) as f:
        info = json.load(f)
    assert info["task"] == "classifier" and info["labels"] == support.MRPC_LABELS
    assert info["text_inputs"] == ["text_a", "text_b"] and info["seq_length"] == support.SEQ


def test_next_version_follows_the_highest_number(tmp_path):
    assert serving.next_version(str(tmp_path / "absent")) == 1
    for name in ("3", "12", "tmp", ".tmp-export-13-x"):
        (tmp_path / name).mkdir()
    (tmp_path / "99").write_text("a file is not a version")
    assert serving.next_version(str(tmp_path)) == 13


def _encoder(policy="float32"):
    from bert_tf.model import BertEncoder
    keras.utils.set_random_seed(3)
    return BertEncoder(support.tiny_config(), dtype=policy)


def _quick_export(model, export_dir, **kwargs):
    """An export without the raw-text signature and warm-up (fast)."""
    return export_savedmodel(model, "encoder", str(export_dir), support.vocab_file(), True, 32,
                          text_signatures=False, warmup=False, **kwargs)


@pytest.fixture(scope="module")
def bf16_export(tmp_path_factory):
    """A mixed-precision (bfloat16) encoder exported into a folder that already holds
    version 7."""
    export_dir = tmp_path_factory.mktemp("bf16")
    (export_dir / "7").mkdir()
    model = _encoder("mixed_bfloat16")
    return model, export_dir, _quick_export(model, export_dir)


def test_versions_count_up_and_are_never_overwritten(bf16_export):
    _, export_dir, path = bf16_export
    assert path == str(export_dir / "8")
    with pytest.raises(FileExistsError, match="never overwritten"):
        _quick_export(_encoder(), export_dir, version=8)
    assert sorted(os.listdir(export_dir)) == ["7", "8"]


def test_mixed_precision_model_serves_float32(bf16_export):
    model, _, path = bf16_export
    for signature in _from_proto(path).values():
        assert {dtype for dtype, _ in signature["outputs"].values()} == {F}
    features = support.classifier_features(support.mrpc_pairs(4)[0], seq_length=32)
    out = support.loaded_path(path).signatures["serve_features"](
        **{k: tf.constant(v) for k, v in features.items()})
    expected = support.keras_outputs(model, features, graph=True)
    assert out["pooled_output"].dtype == tf.float32
    # The served model multiplies the real tokens packed together, the Keras model the padded
    # batch: bfloat16 matmuls of other shapes round differently (8-bit mantissas).
    np.testing.assert_allclose(out["pooled_output"], expected["pooled_output"], atol=0.04)


def test_a_failed_export_leaves_no_version_behind(tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(exporter, "write_warmup", broken)
    with pytest.raises(RuntimeError, match="disk full"):
        export_savedmodel(_encoder(), "encoder", str(tmp_path), support.vocab_file(), True, 32,
                       text_signatures=False)
    assert os.listdir(tmp_path) == []


@pytest.fixture(scope="module")
def classifier_model():
    """A random 2-class classifier, shared: each export below refuses it before any work."""
    return support.build_model("classifier")


@pytest.mark.parametrize("kind, kwargs, message", [
    ("classify", {}, "unknown task 'classify'"),
    ("squad", {}, "needs a BertSpanLabeler"),
    ("classifier", {}, "give the label list"),
    ("classifier", {"labels": ["a", "b", "c"]}, "3 labels .* 2 classes"),
    ("classifier", {"labels": ["a", "a"]}, "distinct"),
    ("regression", {}, "num_classes=1"),
    ("classifier", {"labels": ["a", "b"], "seq_length": 513}, "max_position_embeddings"),
])
def test_inconsistent_arguments_are_rejected_before_any_work(classifier_model, tmp_path, kind,
                                                             kwargs, message):
    kwargs.setdefault("seq_length", 32)
    with pytest.raises(ValueError, match=message):
        export_savedmodel(classifier_model, kind, str(tmp_path), support.vocab_file(), True, **kwargs)
    assert not os.path.exists(tmp_path / "1")


def test_vocabulary_must_fit_the_model(tmp_path):
    from bert_tf.model import BertEncoder
    small = BertEncoder(support.tiny_config(vocab_size=100))
    with pytest.raises(ValueError, match="30522 tokens, more than the model's vocab_size"):
        _quick_export(small, tmp_path)


def test_export_to_a_url_numbers_versions_there(tmp_path):
    """ram:// stands for gs://: versions are listed, numbered and loaded through tf.io.gfile."""
    export_dir = "ram://test_serving_export/models/bert"
    tf.io.gfile.makedirs(f"{export_dir}/4")
    model = _encoder()
    assert _quick_export(model, export_dir) == f"{export_dir}/5"
    assert _quick_export(model, export_dir + "/") == f"{export_dir}/6"
    assert sorted(tf.io.gfile.listdir(export_dir)) == ["4", "5", "6"], "no staging may remain"
    assert serving.next_version(export_dir) == 7
    with pytest.raises(FileExistsError, match="never overwritten"):
        _quick_export(model, export_dir, version=6)
    features = support.classifier_features(support.mrpc_pairs(2)[0], seq_length=32)
    out = support.loaded_path(f"{export_dir}/6").signatures["serve_features"](
        **{k: tf.constant(v) for k, v in features.items()})
    np.testing.assert_allclose(out["pooled_output"],
                               support.keras_outputs(model, features)["pooled_output"], atol=1e-5)
    assert not os.path.exists("ram:") and not os.path.exists(tmp_path / "ram:")


def test_job_refuses_a_checkpoint_without_the_head(tmp_path):
    from bert_tf.checkpoints import save_weights
    from bert_tf.jobs.export import ExportOptions, run
    prefix = save_weights(_encoder(), str(tmp_path / "ckpt"), "tf1",
                          vocab_file=support.vocab_file())
    with pytest.raises(Exception, match="(?i)classifier|output_weights|missing"):
        run(ExportOptions(export_dir=str(tmp_path / "export"), init_checkpoint=prefix,
                          task="classifier", labels=["0", "1"], max_seq_length=32))
    assert not os.path.exists(tmp_path / "export" / "1")


def test_runner_exports_a_checkpoint_as_the_next_version(tmp_path):
    """export_savedmodel.py on a TF1 checkpoint with --task_name: labels and pairs come from the
    task, the served logits are the checkpoint's model's."""
    from bert_tf.checkpoints import save_weights
    model = support.build_model("classifier", seed=11)
    prefix = save_weights(model, str(tmp_path / "ckpt"), "tf1", vocab_file=support.vocab_file())
    (tmp_path / "export" / "1").mkdir(parents=True)
    # The script runs as __main__ in this process (its own absl flags; a new interpreter
    # importing TensorFlow would add ~5 s and check nothing more here).
    from scripts_in_process import run_script
    out = run_script("export_savedmodel.py", f"--init_checkpoint={prefix}",
                     f"--export_dir={tmp_path / 'export'}", "--task_name=MRPC",
                     "--max_seq_length=32", "--notext_signatures", "--nowarmup")
    assert out.returncode == 0, out.stderr[-3000:]
    path = tmp_path / "export" / "2"
    assert f"exported {path}" in out.stdout
    with open(path / "assets.extra" / "export_info.json") as f:
        assert json.load(f)["labels"] == support.MRPC_LABELS
    features = support.classifier_features(*support.mrpc_pairs(4), seq_length=32)
    served = support.loaded_path(str(path)).signatures["serve_features"](
        **{k: tf.constant(v) for k, v in features.items()})
    np.testing.assert_allclose(served["logits"], support.keras_outputs(model, features)["logits"],
                               rtol=1e-4, atol=1e-5)


def _fake_cpu(monkeypatch, *flags):
    from bert_tf import cpu_features
    monkeypatch.setattr(cpu_features, "cpu_flags", lambda: frozenset(flags))


def test_bf16_advice_names_the_alternative_on_a_cpu_without_bfloat16(monkeypatch):
    _fake_cpu(monkeypatch, "avx2", "avx512f", "avx512_vnni")
    advice = exporter.bf16_advice("bf16")
    assert "no bfloat16 instructions" in advice and "0.27-0.38x fp32" in advice
    assert advice.endswith("export int8 (x86-64 with AVX-512 VNNI) or fp32")
    assert exporter.bf16_advice("int8_bf16").endswith("export int8")
    assert exporter.bf16_advice("fp32") is None and exporter.bf16_advice("int8") is None


@pytest.mark.parametrize("flags", [("avx512f", "avx512_bf16"), ("amx_bf16",), ("asimd", "bf16"),
                                   ()])
def test_bf16_is_not_discouraged_where_it_is_native_or_unknown(monkeypatch, flags):
    _fake_cpu(monkeypatch, *flags)
    assert exporter.bf16_advice("bf16") is None


@pytest.mark.slow
def test_a_bf16_export_warns_and_still_exports(monkeypatch, caplog, tmp_path):
    _fake_cpu(monkeypatch, "avx2", "avx512f", "avx512_vnni")
    with caplog.at_level("WARNING", logger="bert_tf"):
        path = _quick_export(_encoder(), tmp_path, precision="bf16")
    assert os.path.isfile(os.path.join(path, "saved_model.pb"))
    assert [r.getMessage() for r in caplog.records] == [exporter.bf16_advice("bf16")]
