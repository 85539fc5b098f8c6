"""The portable exports: LiteRT (.tflite) and ONNX files, and MediaPipe Tasks models, for the
runtimes built for single requests and small devices (ai-edge-litert, MediaPipe Tasks,
onnxruntime), beside the SavedModel that TensorFlow Serving loads (bert_tf.serving).

  export.py              the export itself: the serve_features computation as Keras 3's
                         Model.export writes it, and the version folder (model file,
                         vocab.txt, export_info.json)
  smoothing.py,          int8: activation outliers moved into the weights before quantizing,
  calibration.py         from calibration text
  mediapipe_metadata.py, what MediaPipe Tasks reads from a .tflite (tokenizer, labels) and its
  mediapipe_version.py   minimum parser version
  onnx_ops.py            the ONNX conversions tf2onnx lacks
"""

from bert_tf.serving.portable.export import (FILES, KINDS, check_portable_options,
                                             feature_model, write_portable)

__all__ = ["FILES", "KINDS", "check_portable_options", "feature_model", "write_portable"]
