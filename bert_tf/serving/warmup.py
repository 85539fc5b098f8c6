"""assets.extra/tf_serving_warmup_requests: PredictionLog records TF Serving replays when it
loads a version, so the first real request does not pay for graph set-up.

Needs the tensorflow-serving-api protos (a dependency of bert_tf; jobs call
require_serving_api() before training so a missing install fails before, not after, the work).
"""

import os

import numpy as np
import tensorflow as tf

from bert_tf import names


def _protos():
    try:
        from tensorflow_serving.apis import model_pb2, predict_pb2, prediction_log_pb2
    except ImportError as e:
        raise ImportError(f"writing TF Serving warm-up requests needs tensorflow-serving-api "
                          f"({e}): pip install tensorflow-serving-api==2.21.0 (it is in "
                          f"requirements.txt), or export without warm-up requests") from None
    return model_pb2, predict_pb2, prediction_log_pb2


def require_serving_api(what="export"):
    """Raises ValueError naming `what` (a flag) when the warm-up protos cannot be imported."""
    try:
        _protos()
    except ImportError as e:
        raise ValueError(f"{what}: {e}") from None


def feature_example(features, row):
    """The serialized tf.Example of row `row` of int features (run_classifier's layout; a
    multiple-choice row [N, S] is flattened choice-major, as serve_examples reads it)."""
    fields = {k: tf.train.Feature(int64_list=tf.train.Int64List(
        value=np.asarray(features[k][row]).astype(np.int64).reshape(-1).tolist()))
        for k in names.FEATURE_KEYS}
    return tf.train.Example(features=tf.train.Features(feature=fields)).SerializeToString()


def warmup_requests(head, text=True, lengths=()):
    """[(signature name, {input name: numpy array})] exercising every exported signature: raw
    text at batch 1 and 2 (one row fills seq_length), features and examples at batch 1 (SQuAD:
    features of every window of the long row, whose first window the examples hold), and
    features at batch 1 cut to each of `lengths` (an XLA export compiles one program per
    length bucket: the server compiles them while loading, not on a client's request)."""
    texts = head.warmup_texts()
    requests = []
    if text:
        requests.append((names.SERVING_DEFAULT, {k: np.array(v[:1], object)
                                                 for k, v in texts.items()}))
        requests.append((names.SERVING_DEFAULT, {k: np.array(v, object)
                                                 for k, v in texts.items()}))
    encoded, _ = head.encode(tuple(tf.constant(texts[n]) for n in head.text_names))
    features = {k: v.numpy().astype(np.int32) for k, v in encoded.items()}
    requests.append((names.SERVE_FEATURES, {k: v[1:] for k, v in features.items()}))
    for length in lengths:
        if length < features["input_ids"].shape[-1]:
            requests.append((names.SERVE_FEATURES,
                             {k: v[1:2, ..., :length] for k, v in features.items()}))
    requests.append((names.SERVE_EXAMPLES,
                     {names.EXAMPLES_KEY: np.array([feature_example(features, 1)], object)}))
    return requests


def predict_request(signature, inputs):
    """The PredictRequest a TF Serving client sends: `inputs` ({name: array}) to `signature`."""
    model_pb2, predict_pb2, _ = _protos()
    request = predict_pb2.PredictRequest(model_spec=model_pb2.ModelSpec(signature_name=signature))
    for key, value in inputs.items():
        request.inputs[key].CopyFrom(tf.make_tensor_proto(value))
    return request


def write_warmup(path, requests):
    """Writes `requests` ([(signature, inputs)], or PredictRequests) as PredictionLog records to
    the TFRecord file `path` (the caller makes it atomic: it lives in the staging folder of the
    export)."""
    _, _, prediction_log_pb2 = _protos()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with tf.io.TFRecordWriter(path) as writer:
        for request in requests:
            if isinstance(request, tuple):
                request = predict_request(*request)
            log = prediction_log_pb2.PredictionLog(
                predict_log=prediction_log_pb2.PredictLog(request=request))
            writer.write(log.SerializeToString())
    return len(requests)


def read_warmup(path):
    """[(signature name, {input name: numpy array})] of a warm-up file (for checks/replays)."""
    _, _, prediction_log_pb2 = _protos()
    out = []
    for record in tf.data.TFRecordDataset(path).as_numpy_iterator():
        log = prediction_log_pb2.PredictionLog.FromString(record)
        request = log.predict_log.request
        out.append((request.model_spec.signature_name,
                    {k: tf.make_ndarray(v) for k, v in request.inputs.items()}))
    return out
