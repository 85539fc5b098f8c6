"""The quickstart's data: docstrings of the standard library -> pre-training text and a
package-classification task in run_classifier's generic TSV layout."""

import json
import textwrap

import pytest

from bert_tf.data import docstrings
from bert_tf.quickstart import data, task


def test_sentences_are_split_and_code_is_left_out():
    doc = textwrap.dedent("""\
        Return the event loop, e.g. the running one. It is created on demand!

        Example:

            loop = get_event_loop()

        >>> get_event_loop()
        <loop>

        A second paragraph spans
        two lines. Ok.
        ---------------
        """)
    assert docstrings.split_sentences(doc) == [
        "Return the event loop, e.g. the running one.",
        "It is created on demand!",
        "A second paragraph spans two lines.",
    ]


def test_module_documents_without_running_the_module():
    source = textwrap.dedent('''\
        """Tools for widgets. They draw things."""
        raise SystemExit("importing this module would stop the interpreter")

        def helper():
            """Help the widget with its work."""

        class Widget:
            """A widget on the screen."""
            def draw(self):
                """Draw the widget on its canvas."""

        class Empty:
            pass
        ''')
    docs = docstrings.module_documents("tk.widgets", source)
    assert [(d.name, d.sentences) for d in docs] == [
        ("tk.widgets", ["Tools for widgets.", "They draw things.",
                        "Help the widget with its work."]),
        ("tk.widgets.Widget", ["A widget on the screen.", "Draw the widget on its canvas."]),
    ]
    assert docs[0].package == "tk"


def test_stdlib_walk_skips_tests_and_non_packages(tmp_path):
    (tmp_path / "pkg" / "test").mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text('"""The package does many things."""\n')
    (tmp_path / "pkg" / "mod.py").write_text('"""A module of the package."""\n')
    (tmp_path / "pkg" / "test" / "__init__.py").write_text('"""Tests are not prose here."""\n')
    (tmp_path / "loose").mkdir()
    (tmp_path / "loose" / "x.py").write_text('"""Not a package, never read."""\n')
    (tmp_path / "top.py").write_text('"""A top level module here."""\n')
    (tmp_path / "antigravity.py").write_text('"""Opens a web browser."""\n')
    assert [m for m, _ in docstrings.stdlib_files(str(tmp_path))] == ["pkg", "pkg.mod", "top"]
    docs = docstrings.harvest(str(tmp_path), packages={"pkg"})
    assert [d.name for d in docs] == ["pkg", "pkg.mod"]


def test_corpus_file_is_create_pretraining_data_format(tmp_path):
    docs = [docstrings.Document("a", "a", ["One sentence here.", "Two sentences here."]),
            docstrings.Document("b", "b", ["Another document here."])]
    stats = docstrings.write_corpus(docs, tmp_path / "c.txt")
    expected = "One sentence here.\nTwo sentences here.\n\nAnother document here.\n"
    assert (tmp_path / "c.txt").read_text() == expected
    assert stats == {"documents": 2, "sentences": 3, "words": 9, "bytes": len(expected)}


def _docs():
    docs = []
    for package in ("alpha", "beta", "gamma"):
        sentences = [f"The {package} thing number {i} works well." for i in range(40)]
        docs.append(docstrings.Document(package, package, sentences + ["Shared by all of them."]))
    docs.append(docstrings.Document("alpha.sub", "alpha.sub", ["Shared by all of them.",
                                                           "Only alpha says this."]))
    return docs


def test_task_is_balanced_disjoint_unambiguous_and_deterministic():
    splits = task.build_task(_docs(), ["alpha", "beta", "gamma"])
    assert splits == task.build_task(_docs(), ["alpha", "beta", "gamma"])
    examples = [e for name in task.SPLITS for e in splits[name]]
    assert len(examples) == 3 * 40            # balanced: 40 per package (alpha's 41st dropped)
    assert len({s for s, _ in examples}) == len(examples)       # no sentence twice
    assert "Shared by all of them." not in {s for s, _ in examples}
    for sentence, label in examples:
        assert label in sentence or sentence == "Only alpha says this."
    assert all(splits[name] for name in task.SPLITS)
    assert len(splits["train"]) > len(splits["dev"]) + len(splits["test"])


def test_a_small_labelled_set_keeps_dev_and_test_as_they_are():
    full = task.build_task(_docs(), ["alpha", "beta", "gamma"])
    small = task.build_task(_docs(), ["alpha", "beta", "gamma"], max_train_per_label=5)
    assert {name: small[name] for name in ("dev", "test")} == {
        name: full[name] for name in ("dev", "test")}
    assert sorted(label for _, label in small["train"]) == ["alpha"] * 5 + ["beta"] * 5 + [
        "gamma"] * 5
    assert set(small["train"]) < set(full["train"])


def test_task_rejects_unusable_requests():
    with pytest.raises(ValueError, match="two distinct packages"):
        task.build_task(_docs(), ["alpha"])
    tiny = [docstrings.Document("a", "a", ["Only one sentence here."]),
            docstrings.Document("b", "b", ["Only one other sentence."])]
    with pytest.raises(ValueError, match="too few"):
        task.build_task(tiny, ["a", "b"])


def test_task_files_are_read_by_run_classifiers_generic_processor(tmp_path):
    from bert_tf.data.classification import GenericProcessor
    splits = task.build_task(_docs(), ["alpha", "beta", "gamma"])
    counts = task.write_task(splits, tmp_path)
    processor = GenericProcessor(text_a_column=task.TEXT_COLUMN, label_column=task.LABEL_COLUMN)
    train = processor.get_train_examples(str(tmp_path))
    assert processor.get_labels() == ["alpha", "beta", "gamma"]
    assert [(e.text_a, e.label) for e in train] == splits["train"]
    assert len(processor.get_dev_examples(str(tmp_path))) == sum(counts["dev"].values())
    assert task.read_tsv(tmp_path / "test.tsv") == splits["test"]


def test_make_data_on_the_installed_stdlib(tmp_path):
    summary = data.make_data(str(tmp_path), packages=("json", "email"), corpus_packages=["csv"],
                             max_per_label=50)
    assert json.loads((tmp_path / "summary.json").read_text()) == summary
    text = (tmp_path / "pretrain.txt").read_text()
    documents = text.strip("\n").split("\n\n")
    assert len(documents) == summary["pretrain"]["documents"] > 10
    assert all(line.strip() for doc in documents for line in doc.split("\n"))
    held_out = (tmp_path / "heldout.txt").read_text().strip("\n").split("\n\n")
    assert not set(held_out) & set(documents)
    counts = summary["task"]["examples"]
    assert sum(sum(c.values()) for c in counts.values()) == 100
    assert set(counts["train"]) == {"json", "email"}
    with pytest.raises(ValueError, match="nosuchpackage"):
        data.make_data(str(tmp_path / "x"), packages=("json", "nosuchpackage"),
                       corpus_packages=["csv"])
