"""Task name -> processor, as run_classifier.py's --task_name selects it."""

from bert_tf.data.classification import glue
from bert_tf.data.classification.generic import GenericProcessor
from bert_tf.data.classification.tasks import canonical_task_name
from bert_tf.data.classification.xnli import XnliProcessor

PROCESSORS = {
    "cola": glue.ColaProcessor,
    "sst-2": glue.Sst2Processor,
    "mrpc": glue.MrpcProcessor,
    "sts-b": glue.StsbProcessor,
    "qqp": glue.QqpProcessor,
    "mnli": glue.MnliProcessor,
    "mnli-mm": glue.MnliMismatchedProcessor,
    "qnli": glue.QnliProcessor,
    "rte": glue.RteProcessor,
    "wnli": glue.WnliProcessor,
    "ax": glue.AxProcessor,
    "xnli": XnliProcessor,
}


def get_processor(task_name, **kwargs):
    """A processor for `task_name` (case-insensitive; aliases like sst2, stsb accepted).

    kwargs go to the processor: skip_bad_rows for all, language for xnli, and the column,
    format and file arguments of GenericProcessor for task_name="generic".
    """
    if str(task_name).strip().lower() == "generic":
        return GenericProcessor(**kwargs)
    return PROCESSORS[canonical_task_name(task_name)](**kwargs)
