"""MediaPipe Tasks metadata in a LiteRT export (ExportSettings.format "mediapipe"): the BERT
tokenizer and its vocabulary on the inputs, and the labels (classifier) on the output, so that
MediaPipe's TextClassifier and TextEmbedder load the .tflite as it is.

MediaPipe finds the three int32 inputs by the metadata names ids, mask and segment_ids, reads
the scores from the model's only output, and tokenizes in C++: ASCII lower-casing, then
WordPiece on the packed vocabulary, one text per request ([CLS] text [SEP]). It has no casing
option and no accent stripping, so only uncased single-text models qualify, and text with
accents may be split differently from FullTokenizer."""

import json

KINDS = ("classifier", "embedding")
_INPUTS = {"input_ids": "ids", "input_mask": "mask", "segment_ids": "segment_ids"}
INSTALL = "pip install mediapipe==1.2.3 ai-edge-litert==2.3.0"


def check_mediapipe(kind, do_lower_case, text_pair):
    """Raises ValueError when MediaPipe's tokenizer cannot feed this model."""
    if kind not in KINDS:
        raise ValueError(f"a mediapipe export is a classifier or an embedding model, not {kind}")
    if not do_lower_case:
        raise ValueError("a mediapipe export needs an uncased model (do_lower_case=true): "
                         "MediaPipe lower-cases every text and has no casing option")
    if text_pair:
        raise ValueError("a mediapipe export takes one text per request: MediaPipe cannot "
                         "feed text pairs (text_b)")


def write_metadata(path, kind, vocab_file, labels, info):
    """Writes the metadata into the .tflite at `path` (in place); `info` (export_info) rides
    along as custom metadata named bert_tf_export_info."""
    from bert_tf.serving.portable import mediapipe_version
    mediapipe_version.install()
    try:
        from ai_edge_litert.interpreter import Interpreter
        from mediapipe.tasks.metadata import metadata_schema_py_generated as schema
        from mediapipe.tasks.python.metadata.metadata_writers import metadata_info, \
            metadata_writer
    except ImportError:
        raise ImportError(f"a mediapipe export needs: {INSTALL}") from None

    class ExportInfo(metadata_info.CustomMetadataMd):
        def create_metadata(self):
            md = schema.CustomMetadataT()
            md.name = self.name
            md.data = list(json.dumps(info).encode("utf-8"))
            return md

    with open(path, "rb") as f:
        model = f.read()
    runner = Interpreter(model_content=model).get_signature_runner()
    tensors = {k: v["name"] for k, v in runner.get_input_details().items()}
    writer = metadata_writer.MetadataWriter(bytearray(model))
    writer.add_general_info(f"bert_tf {kind}", f"bert_tf {kind} export (token ids in)")
    writer.add_bert_text_input(metadata_writer.BertTokenizer(vocab_file),
                               *(tensors[k] for k in _INPUTS))
    if kind == "classifier":
        writer.add_classification_output(metadata_writer.Labels().add(list(labels)),
                                         name="probabilities")
    else:
        writer.add_feature_output(name="embedding")
    writer.add_custom_metadata(ExportInfo("bert_tf_export_info"))
    populated, _ = writer.populate()
    del writer          # its temporary folder goes now, not at interpreter exit (a warning)
    with open(path, "wb") as f:
        f.write(populated)
