"""Options declared once (bert_tf.options): a job's options class defines its runner's flags
(name, type, default, choices, help) and is built back from them; a subclass that declares a
field again changes that runner's flag only."""

import dataclasses

import pytest
from absl import flags

from bert_tf.jobs.classifier import ClassifierOptions, ProcessorOptions
from bert_tf.jobs.options import ModelOptions
from bert_tf.jobs.ner import NerOptions
from bert_tf.jobs.squad import SquadOptions
from bert_tf.jobs.swag import SwagOptions
from bert_tf.options import define_flags, flag_fields, flag_values, non_defaults


def _parse(options_class, *argv):
    values = flags.FlagValues()
    define_flags(options_class, flag_values=values)
    values(["prog", *argv])
    return values


def test_every_option_field_becomes_a_flag_with_its_default_and_help():
    values = _parse(SwagOptions)
    names = {f.name for f in flag_fields(SwagOptions)}
    assert names == set(values)
    for field in flag_fields(SwagOptions):
        assert values[field.name].help.endswith(field.metadata["bert_tf_help"])  # enums:
        # absl puts "<a|b>: " before the help
    assert "config" not in values                       # built from --bert_config_file


def test_a_subclass_changes_its_runners_default_and_help_only():
    swag, ner = _parse(SwagOptions), _parse(NerOptions)
    assert swag["train_batch_size"].default == 16 and ner["train_batch_size"].default == 32
    assert swag["learning_rate"].default == 2e-5 and ner["learning_rate"].default == 5e-5
    assert swag["max_seq_length"].help.startswith("Maximum length of each (context, ending)")
    assert ner["max_seq_length"].help.startswith("WordPieces per window")


def test_a_field_declared_again_without_option_is_not_a_flag():
    assert "eval_batch_size" not in _parse(SquadOptions)     # --do_eval scores predictions
    assert "processor_options" not in _parse(ClassifierOptions)


def test_parsed_flags_build_the_options_with_their_types():
    values = _parse(NerOptions, "--output_dir=/tmp/x", "--labels=O,B-PER,I-PER",
                    "--num_train_epochs=1.5", "--context=document", "--do_train",
                    "--class_weights=auto", "--eval_every_steps=10")
    opts = NerOptions(config=None, **flag_values(NerOptions, flag_values=values))
    assert opts.labels == ["O", "B-PER", "I-PER"]
    assert opts.num_train_epochs == 1.5 and opts.context == "document" and opts.do_train
    assert opts.class_weights == "auto" and opts.eval_every_steps == 10
    assert opts.train_batch_size == 32                    # the default, from the field


def test_choices_are_enforced_when_parsing():
    with pytest.raises(flags.IllegalFlagValueError, match="epochs_over"):
        _parse(SquadOptions, "--epochs_over=steps")


def test_a_required_field_has_a_flag_but_no_dataclass_default():
    assert _parse(SquadOptions)["vocab_file"].default is None
    with pytest.raises(TypeError, match="vocab_file"):
        SquadOptions(config=None, output_dir="/tmp/x")
    assert "init_checkpoint" in _parse(ModelOptions)


def test_non_defaults_names_the_options_a_command_line_gave():
    processor = ProcessorOptions(**flag_values(
        ProcessorOptions, flag_values=_parse(ProcessorOptions, "--label_column=y")))
    assert non_defaults(processor, ProcessorOptions.generic_only) == ["--label_column"]
    with pytest.raises(ValueError, match="--label_column only apply to --task_name=generic"):
        processor.keyword_arguments("MRPC")
    assert processor.keyword_arguments("generic")["label_column"] == "y"
    assert ProcessorOptions(xnli_language="de").keyword_arguments("xnli") == {"language": "de"}


def test_options_stay_dataclasses_a_caller_can_replace():
    opts = SwagOptions(config=None, output_dir="/tmp/x")
    assert dataclasses.replace(opts, num_choices=3).num_choices == 3


def test_docs_flags_md_is_generated_from_the_options():
    """docs/flags.md lists every runner's flags as bert_tf.flag_reference prints them; after
    changing an option, regenerate it: python -m bert_tf.flag_reference > docs/flags.md"""
    from bert_tf.flag_reference import reference
    from helpers import REPO
    assert (REPO / "docs" / "flags.md").read_text(encoding="utf-8") == reference()
    for flag in ("--doc_stride", "--multi_label", "--class_weights", "--eval_every_steps",
                 "--freeze_layers", "--epochs_over", "--dynamic_masking", "--text_signatures",
                 "--null_score_diff_threshold", "--num_new_tokens", "--short_seq_prob"):
        assert f"| `{flag}` |" in reference()
    for runner in ("run_classifier.py", "run_ner.py", "run_squad.py", "run_swag.py",
                   "run_embedding.py", "run_pretraining.py", "extract_features.py", "predict_masked.py",
                   "export_savedmodel.py", "python -m bert_tf.predict", "build_vocab.py",
                   "create_pretraining_data.py"):
        assert f"## {runner}\n" in reference()
