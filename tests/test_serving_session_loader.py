"""Exports served as tensorflow_model_server serves them: loaded by TensorFlow's session loader
through the C API (bert_tf.serving.session_check compiles a small C program; no Python in that
path), every warm-up request replayed, and the three signatures answering real requests with
what tf.saved_model.load answers. Skips where no C compiler exists."""

import base64
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import test_serving_support as support
from bert_tf.serving import graph_ops, session_check
from bert_tf.serving.warmup import read_warmup
from helpers import REPO, built_once, export_savedmodel

# Slow as a whole: each test starts a C process that loads TensorFlow and an export (2-3 s), and
# the exports are process-wide caches built by whichever test asks first.
pytestmark = pytest.mark.slow

# Within 1e-6, relative for values above 1: a session optimises the whole graph at once and may
# fuse ops differently from a TF2 function (a few float32 rounding steps on values near 1.5).
FP32 = dict(rtol=1e-6, atol=1e-6)
# bf16 and int8 graphs may get other oneDNN fusions in a session than in a TF2 function, each
# rounding to bfloat16 at other points: within a few bfloat16 steps (2^-8 relative each).
REDUCED = dict(rtol=2 ** -6, atol=2 ** -6)


@pytest.fixture(scope="session")
def server():
    """The compiled session server, built once per test run."""
    if session_check.compiler() is None:
        pytest.skip("no C compiler (cc, gcc or clang): the session-loader check compiles a "
                    "small C program against TensorFlow's C API")
    _, binary = built_once("session_server", lambda folder: session_check.build(str(folder)))
    return binary


def _assert_answers_as_python(path, requests, server, tolerance):
    """The session server replays every warm-up request of `path`, then answers `requests`
    exactly as tf.saved_model.load's signatures do (floats within `tolerance`)."""
    served = session_check.serve(path, requests, binary=server)
    warmup = os.path.join(path, "assets.extra", "tf_serving_warmup_requests")
    assert served.warmup == len(read_warmup(warmup)) > 0
    loaded = tf.saved_model.load(path)
    for (signature, request), answer in zip(requests, served.answers):
        assert not isinstance(answer, str), f"{signature}: {answer}"
        expected = loaded.signatures[signature](**{k: tf.constant(v)
                                                   for k, v in request.items()})
        assert sorted(answer) == sorted(expected), signature
        for name, value in expected.items():
            value, got = value.numpy(), answer[name]
            where = f"{signature}/{name}"
            assert (got.dtype, got.shape) == (value.dtype, value.shape), where
            if np.issubdtype(value.dtype, np.floating):
                np.testing.assert_allclose(got, value, **tolerance, err_msg=where)
            else:
                np.testing.assert_array_equal(got, value, err_msg=where)


@pytest.mark.parametrize("kind", ["classifier", "regression", "multi_label", "squad", "tagger",
                                  "multiple_choice", "embedding", "fill_mask", "encoder"])
def test_every_kind_answers_in_the_session_loader(kind, server):
    _assert_answers_as_python(support.exported(kind)[1], support.requests(kind), server, FP32)


@pytest.mark.parametrize("precision, jit_compile", [("bf16", False), ("int8", False),
                                                    ("int8_bf16", False), ("fp32", True)])
def test_every_precision_answers_in_the_session_loader(precision, jit_compile, server,
                                                       tiny_classifier):
    name = f"session_classifier_{precision}{'_xla' if jit_compile else ''}"
    folder, version = built_once(name, lambda folder: os.path.basename(export_savedmodel(
        tiny_classifier, "classifier", str(folder), support.vocab_file(), True, support.SEQ,
        labels=support.MRPC_LABELS, text_pair=True, precision=precision,
        jit_compile=jit_compile)))
    _assert_answers_as_python(str(folder / version), support.requests("classifier"), server,
                              FP32 if precision == "fp32" else REDUCED)


def test_a_request_missing_an_input_is_refused_as_the_server_refuses_it(server):
    request = support.requests("classifier")[0]
    served = session_check.serve(support.exported("classifier")[1],
                                 [("serving_default", {"text_a": request[1]["text_a"]})],
                                 binary=server)
    assert served.answers == ["input size does not match signature: 1 != 2"]


# --------------------------------------------------------------------------- docs/serving.md
DOCS = REPO / "docs" / "serving.md"
# The model names of the page's requests -> the kind of the shared export that stands in.
MODELS = {"mrpc": "classifier", "squad": "squad", "ner": "tagger", "swag": "multiple_choice",
          "fill_mask": "fill_mask", "encoder": "encoder", "minilm": "embedding"}


def _documented_outputs(kind):
    """The output names the page's task table gives `kind`."""
    row = next(line for line in DOCS.read_text().splitlines()
               if line.startswith(f"| `{kind}` |"))
    return set(re.findall(r"`(\w+)`", row.split("|")[3]))


def _code_blocks(language):
    return re.findall(rf"```{language}\n(.*?)```", DOCS.read_text(), re.S)


def _rest_tensors(body, path):
    """What TF Serving's REST layer makes of a predict body: the row format ("instances", each
    an object of named inputs, batched per name) or the columnar one ("inputs"); values of a
    DT_STRING input as bytes ({"b64": ...} decoded), others in the signature's dtype."""
    signature = body.get("signature_name", "serving_default")
    if "instances" in body:
        columns = {k: [row[k] for row in body["instances"]] for k in body["instances"][0]}
    else:
        columns = body["inputs"]
    specs = graph_ops.read_saved_model(path).meta_graphs[0].signature_def[signature].inputs

    def as_bytes(value):
        if isinstance(value, list):
            return [as_bytes(v) for v in value]
        return base64.b64decode(value["b64"]) if isinstance(value, dict) else value.encode()

    tensors = {}
    for name, value in columns.items():
        dtype = tf.dtypes.as_dtype(specs[name].dtype)
        tensors[name] = (np.array(as_bytes(value), object) if dtype == tf.string
                         else np.array(value, dtype.as_numpy_dtype))
    return signature, tensors


def _serve_documented(model, body, server):
    kind = MODELS[model]
    path = support.exported(kind)[1]
    signature, tensors = _rest_tensors(body, path)
    answer = session_check.serve(path, [(signature, tensors)], binary=server).answers[0]
    assert not isinstance(answer, str), f"{model} {signature}: {answer}"
    assert set(answer) == _documented_outputs(kind), (model, signature)
    return answer


def test_every_documented_rest_request_answers_as_the_page_says(server):
    requests = re.findall(r"curl -s -X POST http://localhost:8501/v1/models/(\w+):predict "
                          r"-d '(.*?)'", "".join(_code_blocks("bash")), re.S)
    assert {m for m, _ in requests} == set(MODELS), "a documented model has no stand-in here"
    signatures = set()
    for model, body in requests:
        body = json.loads(body)
        _serve_documented(model, body, server)
        signatures.add(body["signature_name"])
    assert signatures == {"serving_default", "serve_features"}


def test_the_documented_serve_examples_body_answers(server, tmp_path):
    snippet = next(b for b in _code_blocks("python") if "serve_examples.json" in b)
    features = support.requests("classifier")[1][1]
    with tf.io.TFRecordWriter(str(tmp_path / "eval.tf_record")) as writer:
        for record in support.serialized_examples(features):
            writer.write(record)
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        exec(snippet, {})
    finally:
        os.chdir(cwd)
    body = json.loads((tmp_path / "serve_examples.json").read_text())
    answer = _serve_documented("mrpc", body, server)
    assert answer["label_id"].shape == (2,)


def test_the_documented_grpc_client_gets_its_answer(server, monkeypatch, capsys):
    """The page's gRPC client, run as written, with the channel's Predict answered by the
    session server from the very PredictRequest the client built."""
    import grpc
    from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc
    snippet = next(b for b in _code_blocks("python") if "insecure_channel" in b)
    path = support.exported(MODELS["mrpc"])[1]

    class Stub:
        def __init__(self, channel):
            assert channel == "localhost:8500"

        def Predict(self, request, timeout=None):
            answer = session_check.serve(path, [request], binary=server).answers[0]
            assert not isinstance(answer, str), answer
            response = predict_pb2.PredictResponse()
            for name, value in answer.items():
                response.outputs[name].CopyFrom(tf.make_tensor_proto(value))
            return response

    monkeypatch.setattr(grpc, "insecure_channel", lambda target: target)
    monkeypatch.setattr(prediction_service_pb2_grpc, "PredictionServiceStub", Stub)
    exec(snippet, {})
    printed = capsys.readouterr().out
    assert re.match(r"\[b'[01]'\] \[\[0\.\d+ +0\.\d+\]\]", printed), printed


@pytest.mark.slow
def test_the_documented_saved_model_cli_commands_print_every_output():
    block = next(b for b in _code_blocks("bash") if "saved_model_cli run" in b)
    path = support.exported(MODELS["mrpc"])[1]
    commands = block.replace("\\\n", " ").replace("serving/mrpc/1", path)
    commands = commands.replace("python -c", f"{sys.executable} -c")
    for command in filter(None, commands.splitlines()):
        done = subprocess.run(["bash", "-c", command], capture_output=True, text=True,
                              timeout=600, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
        assert done.returncode == 0, done.stderr[-3000:]
        printed = set(re.findall(r"Result for output key (\w+):", done.stdout))
        assert printed == _documented_outputs("classifier"), command
