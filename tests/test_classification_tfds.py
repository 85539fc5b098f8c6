"""The TFDS loader, offline: name mapping, the error for data that is not prepared, and the
conversion of TFDS records (tfds.testing.mock_data stands in for the real dataset)."""

import pytest
import tensorflow_datasets as tfds

from bert_tf.data.classification import get_processor, load_tfds_examples, task_for_tfds_name
from bert_tf.data.classification.tfds_loader import TFDS_TASKS, tfds_source


@pytest.mark.parametrize("name,task", [("glue/cola", "cola"), ("glue/sst2", "sst-2"),
                                       ("glue/stsb", "sts-b"), ("glue/mnli", "mnli"),
                                       ("glue/mnli_mismatched", "mnli-mm"), ("glue/ax", "ax"),
                                       ("GLUE/QQP", "qqp"), ("SST-2", "sst-2")])
def test_tfds_names_map_to_tasks(name, task):
    assert task_for_tfds_name(name) == task


def test_split_mapping():
    assert tfds_source("mnli", "dev") == ("glue/mnli", "validation_matched")
    assert tfds_source("glue/mnli_mismatched", "test") == ("glue/mnli", "test_mismatched")
    assert tfds_source("mrpc", "dev") == ("glue/mrpc", "validation")
    with pytest.raises(ValueError, match="ax has no train split"):
        tfds_source("ax", "train")
    with pytest.raises(ValueError, match="unsupported TFDS name 'glue/foo'"):
        task_for_tfds_name("glue/foo")
    with pytest.raises(ValueError, match="xnli is not read from TFDS"):
        task_for_tfds_name("xnli")


def test_not_prepared_dataset_gives_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"TFDS dataset glue/mrpc is not prepared in "
                                                + str(tmp_path) + r".*tfds build glue/mrpc"):
        load_tfds_examples("glue/mrpc", "dev", data_dir=str(tmp_path))


def test_class_names_agree_with_the_tfds_builders():
    for task, (builder, _, _, names) in TFDS_TASKS.items():
        label = tfds.builder(builder).info.features["label"]
        if get_processor(task).is_regression:
            continue
        assert label.num_classes == get_processor(task).num_labels, task
        if names is not None:
            assert tuple(label.names) == names, task


@pytest.mark.parametrize("task", ["mrpc", "mnli-mm", "sts-b", "cola"])
def test_records_become_the_processors_examples(task):
    processor = get_processor(task)
    with tfds.testing.mock_data(num_examples=6):
        dev = load_tfds_examples(task, "dev")
        test = load_tfds_examples(task, "test")
    assert len(dev) == 6 and len(test) == 6
    for example in dev:
        assert example.guid.startswith("dev-") and example.text_a
        assert (example.text_b is None) == (task == "cola")
        if processor.is_regression:
            assert isinstance(example.label, float)
        else:
            assert example.label in processor.get_labels()
    assert all(example.label is None for example in test)
    ids = [int(example.guid.split("-")[1]) for example in test]
    assert ids == sorted(ids)  # GLUE file order
