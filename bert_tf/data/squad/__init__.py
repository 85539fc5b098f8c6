"""SQuAD v1.1/v2.0 data path of google-research/bert's run_squad.py: examples, windowed
features, TFRecord I/O and post-processing of logits into predictions."""

from bert_tf.data.squad.examples import (SquadExample, SquadFormatError, SquadReadResult,
                                         read_squad_examples, split_context)
from bert_tf.data.squad.features import (FIRST_UNIQUE_ID, DocSpan, InputFeatures,
                                         check_is_max_context, convert_examples_to_features,
                                         improve_answer_span, iter_features, make_doc_spans)
from bert_tf.data.squad.options import validate_squad_options, validate_window_options
from bert_tf.data.squad.postprocess import (NULL_ONLY_SCORE_DIFF, RawResult, SquadPredictions,
                                            compute_predictions, get_final_text,
                                            write_predictions)
from bert_tf.data.squad.tfrecord import FeatureWriter, feature_spec, read_feature_dataset
