#!/usr/bin/env python3
"""Export a fine-tuned checkpoint as a SavedModel for TensorFlow Serving (or, with --format, as a
LiteRT or ONNX file: token ids in, for ai-edge-litert, MediaPipe Tasks and onnxruntime).

Writes <export_dir>/<next version>/ (saved_model.pb, variables/, assets/vocab.txt,
assets.extra/tf_serving_warmup_requests) with the signatures serving_default (raw text),
serve_features (int32 ids) and serve_examples (serialized tf.Example), for a classifier,
regression, SQuAD, tagger (NER), multiple-choice (SWAG), fill-mask or bare encoder model.

  python export_savedmodel.py --init_checkpoint=mrpc_output/best --task_name=MRPC \
      --vocab_file=uncased_L-12_H-768_A-12/vocab.txt --max_seq_length=128 \
      --export_dir=serving/mrpc
  tensorflow_model_server --rest_api_port=8501 --model_name=mrpc \
      --model_base_path=$PWD/serving/mrpc
  python export_savedmodel.py --init_checkpoint=swag_output/best --task=multiple_choice \
      --num_choices=4 --export_dir=serving/swag
  python export_savedmodel.py --init_checkpoint=pretrain_output --task=fill_mask --top_k=5 \
      --export_dir=serving/fill_mask
  python export_savedmodel.py --init_checkpoint=mrpc_output/best --task_name=MRPC \
      --format=litert --precision=int8 --export_dir=litert/mrpc    # 1/model.tflite
"""

from absl import flags

from bert_tf import cli
from bert_tf import flags as common
from bert_tf.jobs.export import ExportOptions
from bert_tf.options import define_flags, flag_values

FLAGS = flags.FLAGS

common.define_config_flags()
define_flags(ExportOptions)


def main(argv):
    del argv
    from bert_tf.jobs.export import run
    common.setup_logging()
    config = None
    if FLAGS.bert_config_file or FLAGS.model_preset:
        config = common.config_from_flags()
    values = flag_values(ExportOptions)
    given = [name for name in values if FLAGS[name].present]
    print(f"exported {run(ExportOptions(config=config, **values), given)}")


if __name__ == "__main__":
    flags.mark_flags_as_required(["export_dir", "init_checkpoint"])
    cli.run(main)
