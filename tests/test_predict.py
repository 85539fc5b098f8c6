"""python -m bert_tf.predict: predictions without a test file from a SavedModel or a checkpoint,
for every fine-tuned task, on real rows (SST-2, CoNLL-2003, SQuAD, SWAG) with tiny random
models: both model sources agree, NER entities are word spans consistent with the per-word
tags, SQuAD answers sit at their character offsets, multiple-choice probabilities are a
distribution, bad rows are refused naming their line, and --output_file is written atomically
as JSON lines. Multi-label (run_classifier --multi_label, trained briefly on CoNLL-2003 entity
sets) gives the run's own label sets from its export and its checkpoint; long documents (SQuAD
paragraphs around an SST-2 review) read in windows give the same predictions from a windowed
export and from the checkpoint with the same --doc_stride / --window_pooling."""

import csv
import importlib
import json
import os
import shutil
import sys

import numpy as np
import pytest

import test_serving_support as support
from bert_tf import cli
from bert_tf.checkpoints import save_weights
from bert_tf.jobs.predict import PredictOptions, run
from bert_tf.prediction import CheckpointSettings, InputError, word_entities
from bert_tf.prediction import loading
from helpers import REPO, export_savedmodel, shared_path

SST_SEQ = 64
NER_SEQ = 32          # short: a long CoNLL text needs several windows
SST_LABELS = ["0", "1"]
FEATURES = ("input_ids", "input_mask", "segment_ids")


def _export(model, kind, export_dir, seq_length, **kwargs):
    return export_savedmodel(model, kind, str(export_dir), support.vocab_file(), True, seq_length,
                          warmup=False, **kwargs)


def _sst2_rows(count=8):
    with open(shared_path("data/glue/SST-2/dev.tsv"), encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    return [(sentence, label) for sentence, label in rows[1:count + 1]]


def _softmax(logits):
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


# --------------------------------------------------------------------------- models
@pytest.fixture(scope="module", autouse=True)
def predictors_made_once():
    """Each SavedModel is loaded, and each checkpoint built into its serving functions, once in
    this module: both take seconds (the in-graph tokenizer is traced), and a Predictor keeps no
    state between calls, so a run of a model that an earlier test ran with the same settings
    gets the same Predictor. The first load or build of each runs as bert_tf.predict runs it;
    failures are not kept."""
    from bert_tf.jobs import checkpoint_predictor
    load, build = loading.load_saved_model, checkpoint_predictor.build_predictor
    saved, built = {}, {}

    def load_once(path):
        if path not in saved:
            saved[path] = load(path)
        return saved[path]

    def build_once(plan):
        key = repr(plan)
        if key not in built:
            built[key] = build(plan)
        return built[key]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(loading, "load_saved_model", load_once)
        patch.setattr(checkpoint_predictor, "build_predictor", build_once)
        yield


@pytest.fixture(scope="module")
def classifier(tmp_path_factory):
    """A single-text SST-2 classifier as a native checkpoint folder (config + vocab beside it)
    and as version 2 of an export_dir whose version 1 is an empty folder."""
    root = tmp_path_factory.mktemp("classifier")
    model = support.build_model("classifier", seed=5)
    checkpoint = save_weights(model, str(root / "ckpt"), "native",
                              vocab_file=support.vocab_file())
    (root / "export" / "1").mkdir(parents=True)
    version = _export(model, "classifier", root / "export", SST_SEQ, labels=SST_LABELS)
    return {"model": model, "checkpoint": checkpoint, "export_dir": str(root / "export"),
            "version": version, "root": root}


@pytest.fixture(scope="module")
def tagger(tmp_path_factory):
    """A CoNLL tagger exported (seq 32) and saved as a training run leaves it: a trainer
    checkpoint (model + step, `checkpoint` state file), bert_config.json and run_ner's
    label_list.txt, but no vocab.txt."""
    import tensorflow as tf
    root = tmp_path_factory.mktemp("tagger")
    model = support.build_model("tagger", seed=9)
    version = _export(model, "tagger", root / "export", NER_SEQ, labels=support.CONLL_LABELS)
    run_dir = root / "ner_output"
    run_dir.mkdir()
    state = tf.train.Checkpoint(model=model, step=tf.Variable(3, dtype=tf.int64))
    tf.train.CheckpointManager(state, str(run_dir), max_to_keep=1).save()
    model.config.to_json_file(str(run_dir / "bert_config.json"))
    (run_dir / "label_list.txt").write_text("".join(f"{t}\n" for t in support.CONLL_LABELS))
    return {"model": model, "version": version, "run_dir": str(run_dir)}


def _long_conll_text(sentences=6):
    return " ".join(support.conll_sentences(sentences, skip=10))


# --------------------------------------------------------------------------- classifier
def test_savedmodel_and_checkpoint_give_the_same_classifier_predictions_on_sst2(classifier):
    texts = [sentence for sentence, _ in _sst2_rows()]
    served = run(PredictOptions(model=classifier["export_dir"], text=texts, batch_size=3))
    built = run(PredictOptions(model=classifier["checkpoint"], text=texts,
                               checkpoint=CheckpointSettings(task_name="SST-2",
                                                             max_seq_length=SST_SEQ)))
    features = support.classifier_features(texts, seq_length=SST_SEQ)
    expected = _softmax(support.keras_outputs(classifier["model"], features)["logits"])
    assert [r["index"] for r in served] == list(range(len(texts)))
    for a, b, reference in zip(served, built, expected):
        assert list(a["probabilities"]) == SST_LABELS
        p = np.array(list(a["probabilities"].values()))
        np.testing.assert_allclose(p, list(b["probabilities"].values()), atol=1e-6)
        np.testing.assert_allclose(p, reference, atol=1e-5)
        assert a["label"] == b["label"] == SST_LABELS[int(np.argmax(p))]
        assert abs(p.sum() - 1) < 1e-5


def test_export_dir_uses_its_highest_complete_version(classifier, tmp_path):
    assert loading.saved_model_version(classifier["export_dir"]) == classifier["version"]
    export_dir = tmp_path / "versions"
    for version in ("3", "10"):
        shutil.copytree(classifier["version"], export_dir / version)
    (export_dir / "11").mkdir()                      # no saved_model.pb: being written
    assert loading.saved_model_version(str(export_dir)) == str(export_dir / "10")
    assert loading.saved_model_version(str(export_dir / "3")) == str(export_dir / "3")
    assert loading.saved_model_version(str(tmp_path)) is None


def test_real_sst2_tsv_is_read_by_its_header_and_ids_are_copied(classifier, tmp_path):
    """dev.tsv's `sentence` column is the text and its `label` column is ignored; JSON lines
    with ids give the same predictions."""
    tsv = shared_path("data/glue/SST-2/dev.tsv")
    from_tsv = run(PredictOptions(model=classifier["version"], input_file=str(tsv),
                                  batch_size=64))
    assert len(from_tsv) == 872
    rows = _sst2_rows(5)
    jsonl = tmp_path / "rows.jsonl"
    jsonl.write_text("".join(json.dumps({"id": f"dev-{i}", "sentence": s, "label": g}) + "\n"
                             for i, (s, g) in enumerate(rows)), encoding="utf-8")
    from_json = run(PredictOptions(model=classifier["version"], input_file=str(jsonl)))
    assert [r["id"] for r in from_json] == [f"dev-{i}" for i in range(5)]
    for a, b in zip(from_json, from_tsv[:5]):
        assert a["label"] == b["label"]
        np.testing.assert_allclose(list(a["probabilities"].values()),
                                   list(b["probabilities"].values()), atol=1e-6)


def test_text_pair_for_a_single_text_model_is_refused(classifier, tmp_path):
    with pytest.raises(InputError, match=r"^--text_pair: this classifier model takes a single"):
        run(PredictOptions(model=classifier["version"], text=["a"], text_pair=["b"]))
    rows = tmp_path / "pairs.jsonl"
    rows.write_text('{"text": "fine"}\n{"text": "a", "text_pair": "b"}\n')
    with pytest.raises(InputError, match=rf"^{rows}:2: field 'text_pair': this classifier"):
        run(PredictOptions(model=classifier["version"], input_file=str(rows)))


def test_checkpoint_flags_are_refused_for_a_savedmodel(classifier):
    with pytest.raises(InputError, match="--labels, --max_seq_length: for checkpoints only"):
        run(PredictOptions(model=classifier["version"], text=["a"],
                           checkpoint=CheckpointSettings(labels=["x", "y"], max_seq_length=32)))
    with pytest.raises(InputError, match="--task=tagger, but the SavedModel .* classifier"):
        run(PredictOptions(model=classifier["version"], text=["a"], task="tagger"))


def test_checkpoint_without_labels_or_head_is_refused_naming_the_flag(classifier, tmp_path):
    with pytest.raises(InputError, match=r"give --labels \(2 label names.*or --task_name"):
        run(PredictOptions(model=classifier["checkpoint"], text=["a"]))
    encoder = save_weights(support.build_model("encoder"), str(tmp_path / "encoder"), "tf1",
                           vocab_file=support.vocab_file())
    with pytest.raises(InputError, match="holds no task head.*give --task"):
        run(PredictOptions(model=encoder, text=["a"]))
    with pytest.raises(InputError, match="--task makes it a tagger model, but .* classifier "
                                         "head"):
        run(PredictOptions(model=classifier["checkpoint"], text=["a"], task="tagger"))


# --------------------------------------------------------------------------- input files
@pytest.mark.parametrize("name, content, message", [
    ("rows.jsonl", '{"text": "good"}\n{"txt": "oops"}\n',
     r":2: field 'text': missing \(a classifier row needs a text; ignored on this line: txt\)"),
    ("rows.jsonl", '{"text": "good"}\n\n{"text": "a", oops}\n', r":3: invalid JSON"),
    ("rows.jsonl", '{"text": 3}\n', r":1: field 'text' must be a string, got int"),
    ("rows.jsonl", '{"text": "a", "choices": ["x", "y"]}\n',
     r":1: field 'choices': not an input of a classifier model"),
    ("rows.tsv", "text\tlabel\ngood film\t1\nno label\n", r":3: 1 columns, the header has 2"),
    ("rows.tsv", "review\tstars\ngood\t5\n", r":1: the header \(review, stars\) names none"),
    ("rows.txt", "\n\n{\"text\": \"good\"}\n{\"question\": \"why?\"}\n",
     r":4: field 'question': not an input of a classifier"),
])
def test_bad_input_line_is_named(classifier, tmp_path, name, content, message):
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match=rf"^{path}{message}") as error:
        run(PredictOptions(model=classifier["version"], input_file=str(path)))
    assert cli.bad_input_message(error.value) == str(error.value)   # one line, exit status 1


def test_text_flags_must_pair_up(classifier):
    with pytest.raises(InputError, match="--text 2 times, --text_pair 1 time"):
        run(PredictOptions(model=classifier["version"], text=["a", "b"], text_pair=["c"]))
    with pytest.raises(InputError, match="nothing to predict"):
        run(PredictOptions(model=classifier["version"]))
    with pytest.raises(InputError, match="--input_file or the text flags"):
        run(PredictOptions(model=classifier["version"], text=["a"], input_file="x.jsonl"))


def test_output_file_is_written_atomically_as_json_lines(classifier, tmp_path):
    out = tmp_path / "out" / "predictions.jsonl"
    texts = [sentence for sentence, _ in _sst2_rows(4)] + ["naïve café, ünïcödé"]
    results = run(PredictOptions(model=classifier["version"], text=texts,
                                 output_file=str(out)))
    lines = out.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == results and len(lines) == len(texts)
    assert os.listdir(out.parent) == ["predictions.jsonl"]          # no temporary file left
    before = out.read_bytes()
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "fine"}\n{"text": null}\n')
    with pytest.raises(InputError, match=":2: field 'text': missing"):
        run(PredictOptions(model=classifier["version"], input_file=str(bad),
                           output_file=str(out)))
    assert out.read_bytes() == before and os.listdir(out.parent) == ["predictions.jsonl"]


# --------------------------------------------------------------------------- NER
def test_word_entities_from_hand_set_tags():
    text = "John  Smith visited New York City for the U.N. summit"
    words = text.split()
    offsets = [(text.index(w), text.index(w) + len(w)) for w in words]
    bio = ["B-PER", "I-PER", "O", "B-LOC", "I-LOC", "I-LOC", "O", "O", "B-ORG", "O"]
    assert word_entities(words, bio, text, offsets) == [
        {"type": "PER", "start_word": 0, "end_word": 2, "text": "John  Smith", "start": 0,
         "end": 11},
        {"type": "LOC", "start_word": 3, "end_word": 6, "text": "New York City", "start": 20,
         "end": 33},
        {"type": "ORG", "start_word": 8, "end_word": 9, "text": "U.N.", "start": 42,
         "end": 46}]

    def spans(tags):
        return [(e["type"], e["start_word"], e["end_word"], e["text"])
                for e in word_entities(words, tags)]

    # IOB1 (CoNLL's own): I- starts an entity, B- only splits two of the same type.
    assert spans(["I-PER", "I-PER", "O", "I-LOC", "B-LOC", "I-LOC", "O", "O", "I-ORG", "O"]) \
        == [("PER", 0, 2, "John Smith"), ("LOC", 3, 4, "New"), ("LOC", 4, 6, "York City"),
            ("ORG", 8, 9, "U.N.")]
    # Ill-formed BIO as conlleval reads it: a type change or I- after O starts an entity.
    assert spans(["B-PER", "I-LOC", "O", "I-MISC", "O", "B-PER", "B-PER", "O", "O", "I-ORG"]) \
        == [("PER", 0, 1, "John"), ("LOC", 1, 2, "Smith"), ("MISC", 3, 4, "New"),
            ("PER", 5, 6, "City"), ("PER", 6, 7, "for"), ("ORG", 9, 10, "summit")]
    # Plain labels (an IO tagger): equal neighbours form one entity.
    assert spans(["PER", "PER", "O", "LOC", "LOC", "LOC", "O", "O", "ORG", "O"]) == [
        ("PER", 0, 2, "John Smith"), ("LOC", 3, 6, "New York City"), ("ORG", 8, 9, "U.N.")]
    assert word_entities([], []) == []
    with pytest.raises(ValueError, match="10 words but 2 tags"):
        word_entities(words, ["O", "O"])


def _check_entities(result, text):
    """Entities are sorted, disjoint word spans covering exactly the non-O words, each of one
    type, starting where the tags start an entity, with the text's own characters."""
    words, tags, entities = result["words"], result["tags"], result["entities"]
    assert words == text.split() and len(tags) == len(words)
    covered = [None] * len(words)
    previous_end = 0
    for e in entities:
        assert previous_end <= e["start_word"] < e["end_word"] <= len(words)
        previous_end = e["end_word"]
        assert text[e["start"]:e["end"]] == e["text"] == " ".join(words[e["start_word"]:
                                                                          e["end_word"]])
        for k in range(e["start_word"], e["end_word"]):
            covered[k] = e["type"]
            assert tags[k].split("-", 1)[1] == e["type"]
            if k > e["start_word"]:
                assert tags[k] == f"I-{e['type']}"            # continues the entity
        first = e["start_word"]
        assert (tags[first].startswith("B-") or first == 0 or tags[first - 1] == "O"
                or tags[first - 1].split("-", 1)[1] != e["type"])
    assert [t == "O" for t in tags] == [c is None for c in covered]


def _first_piece_tags(model, sentence):
    """The tag of each word from its first WordPiece, the sentence in one window: run_ner's
    rule, computed here from the Keras model."""
    tok = support.full_tokenizer()
    pieces = [tok.encode(word) or [tok.special_ids["[UNK]"]] for word in sentence.split()]
    ids = [tok.special_ids["[CLS]"]] + [i for p in pieces for i in p] + [tok.special_ids["[SEP]"]]
    assert len(ids) <= NER_SEQ
    firsts = np.cumsum([1] + [len(p) for p in pieces])[:-1]
    features = {"input_ids": np.array([ids], np.int32),
                "input_mask": np.ones((1, len(ids)), np.int32),
                "segment_ids": np.zeros((1, len(ids)), np.int32)}
    logits = support.keras_outputs(model, features)["logits"][0]
    return [support.CONLL_LABELS[i] for i in logits[firsts].argmax(-1)]


def test_ner_tags_each_word_by_its_first_wordpiece_on_conll(tagger):
    sentences = [s for s in support.conll_sentences(12)
                 if len(support.full_tokenizer().tokenize(s)) <= NER_SEQ - 2][:5]
    assert len(sentences) >= 3
    results = run(PredictOptions(model=tagger["version"], text=sentences))
    for sentence, result in zip(sentences, results):
        _check_entities(result, sentence)
        assert result["tags"] == _first_piece_tags(tagger["model"], sentence)
    assert any(r["entities"] for r in results)


def test_ner_reads_a_long_text_in_windows_and_tags_every_word(tagger):
    from bert_tf.data.ner import WordScores, encode_units
    text = _long_conll_text()
    words = text.split()
    assert len(support.full_tokenizer().tokenize(text)) > 2 * NER_SEQ
    [result] = run(PredictOptions(model=tagger["version"], text=[text], batch_size=2))
    _check_entities(result, text)
    # run_ner's windows and max-context rule, with the Keras model
    features = encode_units([words], support.full_tokenizer(), NER_SEQ, 64)
    assert features.num_windows > 2
    logits = support.keras_outputs(tagger["model"],
                                   {k: features.arrays[k] for k in FEATURES})["logits"]
    scores = WordScores(features, [len(words)], len(support.CONLL_LABELS))
    for index, window_logits in enumerate(logits):
        scores.add(index, window_logits)
    assert result["tags"] == [support.CONLL_LABELS[i] for i in scores.result()[0].argmax(-1)]


def test_ner_run_output_dir_gives_the_savedmodel_predictions(tagger, tmp_path):
    """The task comes from the checkpoint's head and the labels from label_list.txt; empty and
    oddly spaced texts are fine."""
    texts = support.conll_sentences(3) + ["", "  Peter \t Blackburn  ", _long_conll_text(3)]
    served = run(PredictOptions(model=tagger["version"], text=texts))
    built = run(PredictOptions(model=tagger["run_dir"], text=texts, checkpoint=CheckpointSettings(
        vocab_file=support.vocab_file(), max_seq_length=NER_SEQ)))
    assert built == served
    assert served[3] == {"index": 3, "words": [], "tags": [], "entities": []}
    assert served[4]["words"] == ["Peter", "Blackburn"]
    with pytest.raises(InputError, match="no vocab.txt beside it: give --vocab_file"):
        run(PredictOptions(model=tagger["run_dir"], text=["a"]))
    with pytest.raises(InputError, match=r"^--text_pair: not an input of a tagger"):
        run(PredictOptions(model=tagger["version"], text=["a"], text_pair=["b"]))


# --------------------------------------------------------------------------- SQuAD
@pytest.fixture(scope="module")
def squad_checkpoint(tmp_path_factory):
    model = support.build_model("squad", seed=3)
    return save_weights(model, str(tmp_path_factory.mktemp("squad") / "squad"), "tf1",
                        vocab_file=support.vocab_file())


def test_squad_answer_is_the_context_at_its_character_offsets(squad_checkpoint):
    questions = support.squad_questions(8)
    contexts = [c for _, _, c in questions]
    assert any(not c.isascii() for c in contexts)      # character, not byte, offsets
    settings = CheckpointSettings(max_seq_length=128, max_query_length=24, max_answer_length=12)
    results = run(PredictOptions(model=squad_checkpoint, question=[q for _, q, _ in questions],
                                 context=contexts, doc_stride=64, checkpoint=settings))
    for (_, _, context), result in zip(questions, results):
        assert result["answer"] and context[result["start"]:result["end"]] == result["answer"]
        assert np.isfinite(result["score"]) and np.isfinite(result["null_score"])
    as_text_pair = run(PredictOptions(model=squad_checkpoint,
                                      text=[q for _, q, _ in questions], text_pair=contexts,
                                      doc_stride=64, checkpoint=settings))
    assert as_text_pair == results
    unanswered = run(PredictOptions(model=squad_checkpoint, question=[questions[0][1]],
                                    context=[contexts[0]], doc_stride=64, checkpoint=settings,
                                    version_2_with_negative=True,
                                    null_score_diff_threshold=-1e9))
    assert unanswered[0]["answer"] == "" and unanswered[0]["start"] is None


def test_squad_row_needs_question_and_context(squad_checkpoint, tmp_path):
    rows = tmp_path / "squad.jsonl"
    rows.write_text('{"question": "Who?", "context": "Ann did."}\n{"question": "When?"}\n')
    with pytest.raises(InputError, match=r":2: field 'context': missing \(SQuAD takes a "
                                         r"question and a context\)"):
        run(PredictOptions(model=squad_checkpoint, input_file=str(rows)))


# --------------------------------------------------------------------------- multiple choice
@pytest.fixture(scope="module")
def choice_checkpoint(tmp_path_factory):
    model = support.build_model("multiple_choice", seed=4)
    return save_weights(model, str(tmp_path_factory.mktemp("swag") / "swag"), "native",
                        vocab_file=support.vocab_file())


def test_multiple_choice_probabilities_sum_to_one_and_choice_is_their_argmax(
        choice_checkpoint, tmp_path):
    examples = support.swag_examples(6)
    rows = tmp_path / "swag.tsv"
    with open(rows, "w", encoding="utf-8") as f:
        f.write("id\tcontext\tchoice_0\tchoice_1\tchoice_2\tchoice_3\n")
        for e in examples:
            f.write("\t".join([e.example_id, e.context] + [b for _, b in e.choice_texts()]) + "\n")
    results = run(PredictOptions(model=choice_checkpoint, input_file=str(rows),
                                 checkpoint=CheckpointSettings(max_seq_length=32)))
    assert [r["id"] for r in results] == [e.example_id for e in examples]
    for e, r in zip(examples, results):
        p = np.array(r["probabilities"])
        assert p.shape == (4,) and abs(p.sum() - 1) < 1e-5
        assert r["choice"] == int(np.argmax(p))
        assert r["choice_text"] == e.choice_texts()[r["choice"]][1]
    single = run(PredictOptions(model=choice_checkpoint, context=[examples[0].context],
                                choices=[b for _, b in examples[0].choice_texts()],
                                checkpoint=CheckpointSettings(max_seq_length=32)))
    np.testing.assert_allclose(single[0]["probabilities"], results[0]["probabilities"],
                               atol=1e-6)


def test_multiple_choice_rows_need_as_many_choices_as_the_first(choice_checkpoint, tmp_path):
    rows = tmp_path / "swag.jsonl"
    rows.write_text('{"context": "He sat.", "choices": ["a", "b", "c"]}\n'
                    '{"text": "She ran.", "choices": ["a", "b"]}\n')
    with pytest.raises(InputError, match=r":2: field 'choices': 2 choices, but the model takes "
                                         r"3 per row"):
        run(PredictOptions(model=choice_checkpoint, input_file=str(rows)))


# --------------------------------------------------------------------------- command line
def _predict_cli(*flags):
    """`python -m bert_tf.predict <flags>` run as __main__ in this process
    (scripts_in_process.run_script: its own absl flags, cli.run's one-line error report and
    exit status; a traceback would propagate): the flags, the reading of files and the output
    are what these tests check, and a new interpreter importing TensorFlow costs ~5 s."""
    from scripts_in_process import run_script
    return run_script("bert_tf/predict.py", *flags)


def test_command_line_writes_json_lines(classifier, tmp_path):
    rows = tmp_path / "rows.jsonl"
    texts = [sentence for sentence, _ in _sst2_rows(3)]
    rows.write_text("".join(json.dumps({"text": t, "id": i}) + "\n"
                            for i, t in enumerate(texts)))
    out = tmp_path / "predictions.jsonl"
    proc = _predict_cli(f"--model={classifier['export_dir']}", f"--input_file={rows}",
                        f"--output_file={out}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout == ""
    written = [json.loads(line) for line in out.read_text().splitlines()]
    expected = run(PredictOptions(model=classifier["version"], text=texts))
    assert [r["id"] for r in written] == [0, 1, 2]
    for a, b in zip(written, expected):
        assert a["label"] == b["label"]
        np.testing.assert_allclose(list(a["probabilities"].values()),
                                   list(b["probabilities"].values()), atol=1e-6)


def test_command_line_reports_a_bad_line_in_one_line(classifier, tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"text": "fine"}\n{"text_b": "no first text"}\n')
    proc = _predict_cli(f"--model={classifier['export_dir']}", f"--input_file={rows}")
    assert proc.returncode == 1
    assert proc.stdout == "" and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        f"predict.py: error: {rows}:2: field 'text': missing (a classifier row needs a text)")


# --------------------------------------------------------------------------- multi-label
ML_LABELS = ["LOC", "MISC", "ORG", "PER"]
ML_SEQ = 64


@pytest.fixture(scope="module")
def multi_label_run(tmp_path_factory):
    """run_classifier --multi_label's job on real CoNLL-2003 sentences labelled with the set of
    entity types they mention (quality/multilabel_conll.py, as tests/test_multilabel.py builds
    them): a 1-layer BERT trained 4 epochs on 400 sentences (100 steps; enough for label sets
    that vary by row: measured, 4 different sets among the 24 test rows, threshold 0.25),
    evaluated on 64 (eval_results.txt records the threshold tuned there), predicting 24 test
    sentences and exporting."""
    import keras
    import tensorflow as tf

    from bert_tf.config import BertConfig
    from bert_tf.jobs.classifier import ClassifierOptions
    from bert_tf.jobs.classifier import run as run_classifier
    sys.path.insert(0, str(REPO / "quality"))
    builder = importlib.import_module("multilabel_conll")
    root = tmp_path_factory.mktemp("multi_label")
    builder.build_dataset(root / "data", shared_path("data/conll2003"), max_train=400,
                          max_dev=64, max_test=24)
    keras.utils.set_random_seed(1)
    opts = ClassifierOptions(
        config=BertConfig.from_preset("L-1_H-32_A-2", vocab_size=30522,
                                      max_position_embeddings=128),
        vocab_file=support.vocab_file(), do_lower_case=True, max_seq_length=ML_SEQ, seed=1,
        task_name="generic", multi_label=True,
        processor_options=dict(text_a_column="sentence", label_column="entities"),
        data_dir=str(root / "data"), output_dir=str(root / "run"), do_train=True,
        do_eval=True, do_predict=True, train_batch_size=16, eval_batch_size=32,
        predict_batch_size=16, learning_rate=5e-3, num_train_epochs=4,
        export_dir=str(root / "export"))
    result = run_classifier(opts, tf.distribute.get_strategy())
    from bert_tf.metrics.results import read_eval_results
    return {"root": root, "run_dir": str(root / "run"), "export": result["export"],
            "test": str(root / "data" / "test.tsv"),
            "threshold": read_eval_results(root / "run" / "eval_results.txt")["threshold"]}


def _multi_label_settings(**kwargs):
    return CheckpointSettings(vocab_file=support.vocab_file(), max_seq_length=ML_SEQ, **kwargs)


def _selected(result, threshold):
    return [label for label, p in result["probabilities"].items() if p >= threshold]


def test_multi_label_export_and_checkpoint_give_the_runs_label_sets(multi_label_run):
    """The export (threshold in export_info.json) and the run's output_dir (a classifier head:
    multi_label because its eval_results.txt records a threshold, which is used) give the label
    sets and per-label probabilities run_classifier --do_predict wrote for test.tsv."""
    run_dir, threshold = multi_label_run["run_dir"], multi_label_run["threshold"]
    info = json.loads((multi_label_run["root"] / "export" / "1" / "assets.extra"
                       / "export_info.json").read_text())
    assert (info["task"], info["labels"], info["threshold"]) == ("multi_label", ML_LABELS,
                                                                 threshold)
    assert loading.checkpoint_head(run_dir)[:2] == ("classifier", len(ML_LABELS))
    served = run(PredictOptions(model=multi_label_run["export"],
                                input_file=multi_label_run["test"], batch_size=10))
    built = run(PredictOptions(model=run_dir, input_file=multi_label_run["test"],
                               checkpoint=_multi_label_settings(labels=ML_LABELS)))
    lines = (multi_label_run["root"] / "run" / "test_results.tsv").read_text().splitlines()
    assert lines[0].split("\t") == ML_LABELS
    expected = np.array([[float(v) for v in line.split("\t")] for line in lines[1:]])
    cells = [line.split("\t")[1] for line in
             (multi_label_run["root"] / "run" / "test_predictions.tsv").read_text()
             .splitlines()[1:]]
    assert len(served) == len(built) == len(cells) == 24
    for a, b, reference, cell in zip(served, built, expected, cells):
        assert list(a["probabilities"]) == list(b["probabilities"]) == ML_LABELS
        p = np.array(list(a["probabilities"].values()))
        np.testing.assert_allclose(p, list(b["probabilities"].values()), atol=1e-6)
        np.testing.assert_allclose(p, reference, atol=1e-5)
        assert a["labels"] == b["labels"] == _selected(a, threshold)
        assert ",".join(a["labels"]) == cell
    assert len({tuple(r["labels"]) for r in served}) > 1        # the sets vary by row


def test_the_run_records_its_contract_with_the_tuned_threshold(multi_label_run):
    """run_classifier writes inference.json beside its checkpoints (bert_tf.contract): the
    kind, labels, length and the threshold tuned on dev, which the run's folder is then read
    with, with no flag, as its export is."""
    info = json.loads((multi_label_run["root"] / "run" / "inference.json").read_text())
    assert (info["task"], info["labels"], info["threshold"], info["seq_length"]) == (
        "multi_label", ML_LABELS, multi_label_run["threshold"], ML_SEQ)
    texts = support.conll_sentences(6)
    built = run(PredictOptions(model=multi_label_run["run_dir"], text=texts,
                               checkpoint=CheckpointSettings(vocab_file=support.vocab_file())))
    served = run(PredictOptions(model=multi_label_run["export"], text=texts))
    assert [b["labels"] for b in built] == [s["labels"] for s in served]


def test_run_classifier_output_dir_needs_no_labels_flag(multi_label_run):
    """run_classifier writes label_list.txt (class-id order) to its output_dir: predicting from
    the output_dir needs no --labels and gives what --labels gives."""
    run_dir = multi_label_run["run_dir"]
    assert (multi_label_run["root"] / "run" / "label_list.txt").read_text() == "".join(
        f"{label}\n" for label in ML_LABELS)
    texts = support.conll_sentences(6)
    found = run(PredictOptions(model=run_dir, text=texts, checkpoint=_multi_label_settings()))
    given = run(PredictOptions(model=run_dir, text=texts,
                               checkpoint=_multi_label_settings(labels=ML_LABELS)))
    assert len(found) == len(given) == 6
    for a, b in zip(found, given):
        assert list(a["probabilities"]) == ML_LABELS
        np.testing.assert_allclose(list(a["probabilities"].values()),
                                   list(b["probabilities"].values()), atol=1e-6)
        assert a["labels"] == b["labels"]


def test_multi_label_threshold_flag_and_its_refusals(multi_label_run, classifier):
    """--multi_label_threshold overrides the tuned threshold of a checkpoint (--task=multi_label
    as given); a SavedModel fixed its threshold, a classifier has none."""
    texts = support.conll_sentences(8)
    other = 0.6 if multi_label_run["threshold"] < 0.6 else 0.1
    given = run(PredictOptions(model=multi_label_run["run_dir"], task="multi_label",
                               text=texts, checkpoint=_multi_label_settings(
                                   labels=ML_LABELS, multi_label_threshold=other)))
    served = run(PredictOptions(model=multi_label_run["export"], text=texts))
    for a, b in zip(given, served):
        np.testing.assert_allclose(list(a["probabilities"].values()),
                                   list(b["probabilities"].values()), atol=1e-6)
        assert a["labels"] == _selected(a, other)
        assert b["labels"] == _selected(b, multi_label_run["threshold"])
    assert [a["labels"] for a in given] != [b["labels"] for b in served]
    with pytest.raises(InputError, match="--multi_label_threshold: for checkpoints only; the "
                                         "SavedModel .* fixed it at export"):
        run(PredictOptions(model=multi_label_run["export"], text=texts,
                           checkpoint=CheckpointSettings(multi_label_threshold=0.3)))
    with pytest.raises(InputError, match="--multi_label_threshold: for multi_label models, not "
                                         "a classifier model .*--task=multi_label"):
        run(PredictOptions(model=classifier["checkpoint"], text=texts,
                           checkpoint=CheckpointSettings(task_name="SST-2",
                                                         multi_label_threshold=0.3)))
    with pytest.raises(InputError, match=r"must be in \(0, 1\), got 1.0"):
        run(PredictOptions(model=multi_label_run["run_dir"], text=texts,
                           checkpoint=CheckpointSettings(multi_label_threshold=1.0)))
    bare = multi_label_run["root"] / "without_label_list"        # a run of old: no label list
    if not bare.exists():
        shutil.copytree(multi_label_run["run_dir"], bare,
                        ignore=shutil.ignore_patterns("label_list.txt", "inference.json", "best",
                                                      "eval"))
    with pytest.raises(InputError, match=r"give --labels \(4 label names .*sorted label set.*"
                                         r"or put run_classifier's label_list.txt beside it"):
        run(PredictOptions(model=str(bare), text=texts, checkpoint=_multi_label_settings()))
    with pytest.raises(InputError, match="--task=multi_label, but the SavedModel .* classifier"):
        run(PredictOptions(model=classifier["version"], text=texts, task="multi_label"))


# --------------------------------------------------------------------------- long texts
WINDOW_STRIDE = 48
MAX_WINDOWS = 6


@pytest.fixture(scope="module")
def long_documents(tmp_path_factory):
    """Real long documents (quality/long_text_task.py: SQuAD dev paragraphs with an SST-2 dev
    review inserted), each several windows of SST_SEQ WordPieces long."""
    sys.path.insert(0, str(REPO / "quality"))
    builder = importlib.import_module("long_text_task")
    folder = tmp_path_factory.mktemp("long_text")
    builder.build(str(folder), shared=str(shared_path("")), num_train=1, num_dev=6)
    with open(folder / "dev.tsv", encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    return [text for text, _ in rows]


@pytest.fixture(scope="module")
def windowed_export(classifier, tmp_path_factory):
    """The SST-2 classifier checkpoint exported by export_savedmodel.py's job with long-text
    windows (--doc_stride, --window_pooling, --max_windows; the script itself runs in
    test_export_savedmodel_takes_a_runs_recorded_windows): (version path, export_info.json)."""
    from bert_tf.jobs.export import ExportOptions
    from bert_tf.jobs.export import run as export
    version = export(ExportOptions(
        export_dir=str(tmp_path_factory.mktemp("windowed") / "export"),
        init_checkpoint=classifier["checkpoint"], task="classifier", labels=SST_LABELS,
        max_seq_length=SST_SEQ, doc_stride=WINDOW_STRIDE, window_pooling="max",
        max_windows=MAX_WINDOWS, warmup=False))
    with open(os.path.join(version, "assets.extra", "export_info.json")) as f:
        return version, json.load(f)


@pytest.fixture(scope="module")
def windowed_reference(classifier, long_documents):
    """The Keras model on run_classifier --doc_stride's windows of the long documents, logits
    max-pooled per text."""
    import tensorflow as tf

    from bert_tf.tokenization import BertPreprocessor
    features = BertPreprocessor(support.vocab_file(), seq_length=SST_SEQ,
                                doc_stride=WINDOW_STRIDE, max_windows=MAX_WINDOWS)(
        tf.constant(long_documents))
    rows = features["window_example"].numpy()
    logits = support.keras_outputs(classifier["model"],
                                   {k: features[k].numpy() for k in FEATURES})["logits"]
    assert np.bincount(rows).min() > 1 and np.bincount(rows).max() == MAX_WINDOWS
    return _softmax(np.stack([logits[rows == k].max(axis=0)
                              for k in range(len(long_documents))]))


def test_windowed_export_and_checkpoint_read_long_documents_alike(classifier, windowed_export,
                                                                  long_documents,
                                                                  windowed_reference, tmp_path):
    """export_savedmodel.py --doc_stride/--window_pooling/--max_windows, and the checkpoint with
    the same predict flags (also on the command line), give the Keras model's max-pooled window
    predictions; truncating gives other ones."""
    version, info = windowed_export
    assert (info["window_stride"], info["window_pooling"], info["max_windows"]) == (
        WINDOW_STRIDE, "max", MAX_WINDOWS)
    texts = long_documents
    assert min(len(support.full_tokenizer().tokenize(t)) for t in texts) > 3 * SST_SEQ
    served = run(PredictOptions(model=version, text=texts, batch_size=4))
    settings = CheckpointSettings(labels=SST_LABELS, max_seq_length=SST_SEQ,
                                  window_pooling="max", max_windows=MAX_WINDOWS)
    built = run(PredictOptions(model=classifier["checkpoint"], text=texts,
                               doc_stride=WINDOW_STRIDE, checkpoint=settings))
    for a, b, reference in zip(served, built, windowed_reference):
        p = np.array(list(a["probabilities"].values()))
        np.testing.assert_allclose(p, list(b["probabilities"].values()), atol=1e-6)
        np.testing.assert_allclose(p, reference, atol=1e-5)
        assert a["label"] == b["label"]
    truncated = run(PredictOptions(model=classifier["checkpoint"], text=texts,
                                   checkpoint=CheckpointSettings(task_name="SST-2",
                                                                 max_seq_length=SST_SEQ)))
    gaps = [abs(a["probabilities"]["1"] - b["probabilities"]["1"])
            for a, b in zip(served, truncated)]
    assert max(gaps) > 1e-3
    rows = tmp_path / "long_docs.jsonl"
    rows.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts[:2]))
    proc = _predict_cli(f"--model={classifier['checkpoint']}", "--labels=0,1",
                        f"--max_seq_length={SST_SEQ}", f"--doc_stride={WINDOW_STRIDE}",
                        "--window_pooling=max", f"--max_windows={MAX_WINDOWS}",
                        f"--input_file={rows}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(proc.stdout.splitlines()) == 2
    for line, b in zip(proc.stdout.splitlines(), built):
        a = json.loads(line)
        assert a["label"] == b["label"]
        np.testing.assert_allclose(list(a["probabilities"].values()),
                                   list(b["probabilities"].values()), atol=1e-6)


def _windowed_run_folder(classifier, folder):
    """The SST-2 classifier checkpoint in `folder` with the run_options.json a run_classifier
    --doc_stride run writes there; returns the checkpoint path."""
    from bert_tf.config import BertConfig
    from bert_tf.jobs.classifier import ClassifierOptions, ClassifierTask
    from bert_tf.jobs.driver import write_run_options
    shutil.copytree(os.path.dirname(classifier["checkpoint"]), folder)
    opts = ClassifierOptions(config=BertConfig.from_preset("tiny"), output_dir=str(folder),
                             task_name="generic", max_seq_length=SST_SEQ,
                             doc_stride=WINDOW_STRIDE, window_pooling="max",
                             max_windows=MAX_WINDOWS)
    write_run_options(ClassifierTask(opts))      # a run of old: no inference.json
    return str(folder / os.path.basename(classifier["checkpoint"]))


def test_a_runs_recorded_options_stand_in_for_flags_not_given(classifier, long_documents,
                                                             windowed_reference, tmp_path):
    """A checkpoint folder with the run_options.json a run_classifier --doc_stride run writes:
    predict reads its windows and sequence length from there (--labels only), as if given;
    a flag given still wins."""
    model = _windowed_run_folder(classifier, tmp_path / "run")
    texts = long_documents
    recorded = run(PredictOptions(model=model, text=texts,
                                  checkpoint=CheckpointSettings(labels=SST_LABELS)))
    given = run(PredictOptions(model=model, text=texts, doc_stride=WINDOW_STRIDE,
                               checkpoint=CheckpointSettings(
                                   labels=SST_LABELS, max_seq_length=SST_SEQ,
                                   window_pooling="max", max_windows=MAX_WINDOWS)))
    for a, b, reference in zip(recorded, given, windowed_reference):
        np.testing.assert_allclose(list(a["probabilities"].values()),
                                   list(b["probabilities"].values()), atol=1e-6)
        np.testing.assert_allclose(list(a["probabilities"].values()), reference, atol=1e-5)
    mean_pooled = run(PredictOptions(model=model, text=texts, checkpoint=CheckpointSettings(
        labels=SST_LABELS, window_pooling="mean")))
    gaps = [abs(a["probabilities"]["1"] - b["probabilities"]["1"])
            for a, b in zip(recorded, mean_pooled)]
    assert max(gaps) > 1e-4


def _run_of_old(folder, kind, options):
    folder.mkdir()
    (folder / "run_options.json").write_text(json.dumps({"task": kind, "options": options}))
    return folder


def test_recorded_settings_follow_the_given_stride_and_the_models_task(tmp_path, caplog):
    """A run of old (run_options.json, no inference.json) gives its settings where no flag
    does; a given --doc_stride=0 truncates; another kind's run gives nothing, with a warning."""
    from bert_tf import contract
    windowed = contract.read(_run_of_old(tmp_path / "run", "classifier", {
        "max_seq_length": 64, "do_lower_case": True, "doc_stride": 48,
        "window_pooling": "max", "max_windows": 6}))
    read = contract.resolve(windowed, "classifier", {})
    assert (read.max_seq_length, read.do_lower_case, read.window_stride, read.window_pooling,
            read.max_windows) == (64, True, 48, "max", 6)
    truncating = contract.resolve(windowed, "multi_label", {"window_stride": 0,
                                                           "max_seq_length": 128})
    assert truncating.to_info()["seq_length"] == 128
    assert "window_pooling" not in truncating.to_info()
    ner = contract.read(_run_of_old(tmp_path / "ner", "tagger",
                                    {"max_seq_length": 32, "doc_stride": 16}))
    tagger = contract.resolve(ner, "tagger", {})
    assert (tagger.max_seq_length, tagger.window_stride) == (32, 16)
    with caplog.at_level("WARNING", logger="bert_tf"):
        assert contract.resolve(ner, "classifier", {}) == contract.InferenceContract(
            kind="classifier")
        assert contract.resolve(windowed, "encoder", {}).window_stride == 0
    assert "written by a tagger run; the model is a classifier model" in caplog.text


def test_export_savedmodel_takes_a_runs_recorded_windows(classifier, tmp_path):
    model = _windowed_run_folder(classifier, tmp_path / "run")
    _, info = support.run_export_script(model, str(tmp_path / "export"), "--task=classifier",
                                        "--labels=0,1", in_process=True)
    assert (info["seq_length"], info["window_stride"], info["window_pooling"],
            info["max_windows"]) == (SST_SEQ, WINDOW_STRIDE, "max", MAX_WINDOWS)


def test_a_broken_run_options_file_is_named(classifier, tmp_path):
    folder = tmp_path / "run"
    shutil.copytree(os.path.dirname(classifier["checkpoint"]), folder)
    (folder / "run_options.json").write_text("{\"options\": [1, 2]}\n")
    with pytest.raises(InputError, match=r"run_options.json: not a run_options.json"):
        run(PredictOptions(model=str(folder / os.path.basename(classifier["checkpoint"])),
                           text=["a text"], checkpoint=CheckpointSettings(labels=SST_LABELS)))


def test_window_flags_are_refused_where_they_do_not_apply(classifier, windowed_export, tagger):
    version, _ = windowed_export
    with pytest.raises(InputError, match=r"--doc_stride: the SavedModel .* fixed its windows at "
                                         r"export \(window_stride 48, window_pooling max, "
                                         r"max_windows 6\)"):
        run(PredictOptions(model=version, text=["a"], doc_stride=48))
    with pytest.raises(InputError, match="--doc_stride: the SavedModel .* truncates long texts"):
        run(PredictOptions(model=classifier["version"], text=["a"], doc_stride=48))
    with pytest.raises(InputError, match="--window_pooling: for checkpoints only"):
        run(PredictOptions(model=version, text=["a"],
                           checkpoint=CheckpointSettings(window_pooling="mean")))
    with pytest.raises(InputError, match="--window_pooling, --max_windows: apply to "
                                         "--doc_stride windows"):
        run(PredictOptions(model=classifier["checkpoint"], text=["a"],
                           checkpoint=CheckpointSettings(labels=SST_LABELS, window_pooling="max",
                                                         max_windows=2)))
    with pytest.raises(InputError, match="--max_windows: for classifier, regression, "
                                         "multi_label, embedding checkpoints .* not a tagger "
                                         "model"):
        run(PredictOptions(model=tagger["run_dir"], text=["a"], doc_stride=8,
                           checkpoint=CheckpointSettings(vocab_file=support.vocab_file(),
                                                         max_windows=2)))
    with pytest.raises(InputError, match=r"--max_windows must be >= 0 \(0: all\), got -1"):
        run(PredictOptions(model=classifier["checkpoint"], text=["a"], doc_stride=8,
                           checkpoint=CheckpointSettings(max_windows=-1)))


def test_export_options_threshold_is_for_multi_label_only(classifier, tmp_path):
    """export_savedmodel.py --multi_label_threshold: refused for another task, and checked."""
    from bert_tf.jobs.export import ExportOptions

    def resolve(**kwargs):
        return ExportOptions(export_dir=str(tmp_path), init_checkpoint=classifier["checkpoint"],
                             warmup=False, **kwargs).resolve()

    with pytest.raises(ValueError, match="--multi_label_threshold applies to "
                                         "--task=multi_label, not classifier"):
        resolve(task="classifier", labels=SST_LABELS, multi_label_threshold=0.3)
    with pytest.raises(ValueError, match=r"must be in \(0, 1\), got 1.5"):
        resolve(task="multi_label", labels=SST_LABELS, multi_label_threshold=1.5)
    assert resolve(task="multi_label", labels=SST_LABELS,
                   multi_label_threshold=0.3).contract.multi_label_threshold == 0.3


def test_export_options_window_rules(classifier, tmp_path):
    """bert_tf.jobs.export.ExportOptions (export_savedmodel.py): --doc_stride is SQuAD's
    context stride (default 128) or a classifier's windows (default none), --window_pooling and
    --max_windows need those windows."""
    from bert_tf.jobs.export import ExportOptions

    def resolve(**kwargs):
        return ExportOptions(export_dir=str(tmp_path), init_checkpoint=classifier["checkpoint"],
                             warmup=False, **kwargs).resolve().contract

    assert resolve(task="squad").doc_stride == 128
    truncating = resolve(task="classifier", labels=SST_LABELS)
    assert truncating.windows() == {"window_stride": 0, "window_pooling": "mean",
                                    "max_windows": 0}
    windowed = resolve(task="regression", doc_stride=32, window_pooling="max", max_windows=3)
    assert windowed.windows() == {"window_stride": 32, "window_pooling": "max",
                                  "max_windows": 3}
    with pytest.raises(ValueError, match="^--max_windows applies to --doc_stride windows"):
        resolve(task="classifier", labels=SST_LABELS, max_windows=2)
    with pytest.raises(ValueError, match=r"^--doc_stride=100 is larger than the window of "
                                         r"--max_seq_length=64 \(62 WordPieces"):
        resolve(task="classifier", labels=SST_LABELS, doc_stride=100, max_seq_length=64)
    with pytest.raises(ValueError, match="apply to tasks classifier, regression, multi_label, "
                                         r"embedding \(with --doc_stride\), not tagger"):
        resolve(task="tagger", labels=["O"], window_pooling="max")
