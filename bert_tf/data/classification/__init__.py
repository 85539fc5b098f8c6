"""Sentence(-pair) classification data: GLUE/XNLI/generic processors, the TFDS loader, and the
prediction/submission/eval-result writers run_classifier.py uses."""

from bert_tf.data.classification.examples import (BadRowError, DataFormatError, InputExample,
                                                  ReadStats)
from bert_tf.data.classification.generic import GenericProcessor
from bert_tf.data.classification.glue import (AxProcessor, ColaProcessor, MnliMismatchedProcessor,
                                              MnliProcessor, MrpcProcessor, QnliProcessor,
                                              QqpProcessor, RteProcessor, Sst2Processor,
                                              StsbProcessor, WnliProcessor)
from bert_tf.data.classification.processor import DataProcessor
from bert_tf.data.classification.registry import PROCESSORS, get_processor
from bert_tf.data.classification.tasks import TASKS, TaskInfo, canonical_task_name, get_task_info
from bert_tf.data.classification.tfds_loader import load_tfds_examples, task_for_tfds_name
from bert_tf.data.classification.writers import (submission_path,
                                                  write_glue_submission,
                                                  write_test_results)
from bert_tf.metrics.results import read_eval_results, write_eval_results
from bert_tf.data.classification.xnli import XNLI_LANGUAGES, XnliProcessor
