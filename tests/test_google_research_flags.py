"""docs/google_research.md is generated (bert_tf.flag_reference) from google-research/bert's
flags (bert_tf.google_research_flags) and the runners' options: every flag of its five scripts
is a flag of the bert_tf runner of the same name, with the same default."""

from pathlib import Path

from bert_tf import google_research_flags as gr
from bert_tf.flag_reference import _format, google_research_reference, runner_fields
from bert_tf.options import field_default

REPO = Path(__file__).resolve().parents[1]


def test_docs_google_research_md_is_generated():
    """After changing an option or the data module, regenerate the page:
    python -m bert_tf.flag_reference google_research > docs/google_research.md"""
    page = (REPO / "docs" / "google_research.md").read_text(encoding="utf-8")
    assert page == google_research_reference()


def test_every_google_research_flag_keeps_its_name_and_default():
    differ = [(script, name, theirs, field_default(runner_fields(script)[name]))
              for script, flags in gr.SCRIPTS.items() for name, theirs in flags
              if _format(field_default(runner_fields(script)[name])) != _format(theirs)]
    assert differ == []


def test_notes_name_real_flags():
    names = {name for flags in gr.SCRIPTS.values() for name, _ in flags}
    assert set(gr.NOTES) <= names
    for script, name in gr.SCRIPT_NOTES:
        assert name in dict(gr.SCRIPTS[script])
    for name, (scripts, _) in gr.CHANGED_BEHAVIOUR.items():
        for script in scripts.split():
            assert name in runner_fields(script) and name not in dict(gr.SCRIPTS[script])
