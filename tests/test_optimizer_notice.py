"""A training run with google-research's optimizer (--optimizer=adamw) says so in one start-up
line (bert_tf.training.setup.build_trainer); other optimizers and runs that do not train do
not."""

import pytest
import tensorflow as tf

from bert_tf import BertConfig
from bert_tf.jobs.finetune import FinetuneOptions
from bert_tf.objectives.tagging import TaggingObjective
from bert_tf.training.setup import GOOGLE_OPTIMIZER_NOTE, build_trainer

CONFIG = BertConfig.from_preset("L-1_H-32_A-2", vocab_size=100, max_position_embeddings=16)


def _notices(tmp_path, caplog, **options):
    from bert_tf.model import BertEncoder, BertTokenClassifier
    opts = FinetuneOptions(config=CONFIG, output_dir=str(tmp_path), **options)
    with caplog.at_level("INFO", logger="bert_tf"):
        build_trainer(opts, tf.distribute.get_strategy(),
                      lambda: BertTokenClassifier(BertEncoder(CONFIG), 2), TaggingObjective())
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith("optimizer:")]


def test_training_with_google_research_adamw_says_so_once(tmp_path, caplog):
    assert _notices(tmp_path, caplog, do_train=True, optimizer="adamw") == [
        GOOGLE_OPTIMIZER_NOTE]
    assert "no bias correction, epsilon 1e-6" in GOOGLE_OPTIMIZER_NOTE


@pytest.mark.parametrize("options", [dict(do_train=True, optimizer="adamw_torch"),
                                     dict(do_train=True, optimizer="lamb"),
                                     dict(do_train=False, optimizer="adamw")])
def test_other_optimizers_and_runs_without_training_say_nothing(tmp_path, caplog, options):
    assert _notices(tmp_path, caplog, **options) == []
