"""GLUE and XNLI processors: the real CoLA/SST-2/MRPC/STS-B files in ../shared, and small files
written here in the exact layout GLUE's download script (and XNLI 1.0) produce."""

import collections
import os

import pytest

from bert_tf.data.classification import (BadRowError, DataFormatError, InputExample,
                                         canonical_task_name, get_processor, get_task_info)
from helpers import shared_path

# (task, folder, split, rows, label counts or None, first example, last example):
# counts from ../shared/data/README.md section 1, texts from the files.
REAL = [
    ("cola", "CoLA", "train", 8551, {"1": 6023, "0": 2528},
     InputExample("train-0", "Our friends won't buy this analysis, let alone the next one we "
                  "propose.", None, "1"),
     InputExample("train-8550", "What all did you get for Christmas?", None, "1")),
    ("cola", "CoLA", "dev", 1043, {"1": 721, "0": 322},
     InputExample("dev-0", "The sailors rode the breeze clear of the rocks.", None, "1"),
     # the file has no trailing newline: the last row must still be read
     InputExample("dev-1042", "John talked to Bill about himself.", None, "1")),
    ("cola", "CoLA", "test", 1063, None,
     InputExample("test-0", "Bill whistled past the house.", None, None),
     InputExample("test-1062", "A picture of himself frightened John.", None, None)),
    ("sst-2", "SST-2", "train", 67349, {"1": 37569, "0": 29780},
     InputExample("train-0", "hide new secretions from the parental units ", None, "0"),
     InputExample("train-67348", "this new jangle of noise , mayhem and stupidity must be a "
                  "serious contender for the title . ", None, "0")),
    ("sst-2", "SST-2", "dev", 872, {"1": 444, "0": 428},
     InputExample("dev-0", "it 's a charming and often affecting journey . ", None, "1"),
     InputExample("dev-871", "looking aristocratic , luminous yet careworn in jane hamilton 's "
                  "exemplary costumes , rampling gives a performance that could not be "
                  "improved upon . ' ", None, "1")),
    ("sst-2", "SST-2", "test", 1821, None,
     InputExample("test-0", "uneasy mishmash of styles and genres .", None, None),
     InputExample("test-1820", "dazzling and sugar-sweet , a blast of shallow magnificence "
                  "that only sex , scandal , and a chorus line of dangerous damsels can "
                  "deliver .", None, None)),
    ("mrpc", "MRPC", "train", 3668, {"1": 2474, "0": 1194},
     InputExample("train-0", 'Amrozi accused his brother , whom he called " the witness " , '
                  "of deliberately distorting his evidence .", 'Referring to him as only " the '
                  'witness " , Amrozi accused his brother of deliberately distorting his '
                  "evidence .", "1"),
     InputExample("train-3667", "The 30-year bond US30YT = RR rose 22 / 32 for a yield of 4.31 "
                  "percent , versus 4.35 percent at Wednesday 's close .", "The 30-year bond "
                  "US30YT = RR grew 1-3 / 32 for a yield of 4.30 percent , down from 4.35 "
                  "percent late Wednesday .", "0")),
    ("mrpc", "MRPC", "dev", 408, {"1": 279, "0": 129},
     # unbalanced quote characters stay literal (quoting disabled, as GLUE is read)
     InputExample("dev-0", "He said the foodservice pie business doesn 't fit the company 's "
                  "long-term growth strategy .", '" The foodservice pie business does not fit '
                  "our long-term growth strategy .", "1"),
     InputExample("dev-407", "Ex-KGB agent Putin added that the Beatles were considered ' "
                  "propaganda of an alien ideology ' .", "In Soviet times the Beatles ' music "
                  '" was considered propaganda of an alien ideology .', "1")),
    ("mrpc", "MRPC", "test", 1725, None,
     InputExample("test-0", "PCCW 's chief operating officer , Mike Butcher , and Alex Arena , "
                  "the chief financial officer , will report directly to Mr So .", "Current "
                  "Chief Operating Officer Mike Butcher and Group Chief Financial Officer Alex "
                  "Arena will report to So .", None),
     InputExample("test-1724", "Sobig.F spreads when unsuspecting computer users open file "
                  'attachments in emails that contain such familiar headings as " Thank You ! '
                  ', " " Re : Details " or " Re : That Movie . "', "The virus spreads when "
                  "unsuspecting computer users open file attachments in emails that contain "
                  'familiar headings like " Thank You ! " and " Re : Details " .', None)),
    ("sts-b", "STS-B", "train", 5749, None,
     InputExample("train-0", "A plane is taking off.", "An air plane is taking off.", 5.0),
     InputExample("train-5748", "Putin spokesman: Doping charges appear unfounded", "The "
                  "Latest on Severe Weather: 1 Dead in Texas After Tornado", 0.0)),
    ("sts-b", "STS-B", "dev", 1500, None,
     InputExample("dev-0", "A man with a hard hat is dancing.", "A man wearing a hard hat is "
                  "dancing.", 5.0),
     InputExample("dev-1499", "New video shows US police officers beating mentally-ill man",
                  "New York police officer critically wounded in hatchet attack", 0.0)),
    ("sts-b", "STS-B", "test", 1379, None,
     InputExample("test-0", "A girl is styling her hair.", "A girl is brushing her hair.",
                  None),
     InputExample("test-1378", "South Korea declares end to MERS outbreak", "North Korea "
                  "Delegation Meets With South Korean Officials", None)),
]


@pytest.mark.parametrize("task,folder,split,rows,counts,first,last", REAL,
                         ids=[f"{r[0]}-{r[2]}" for r in REAL])
def test_real_glue_files_read_completely(task, folder, split, rows, counts, first, last):
    processor = get_processor(task)
    examples = processor.get_examples(shared_path(f"data/glue/{folder}"), split)
    assert len(examples) == rows
    assert examples[0] == first
    assert examples[-1] == last
    if counts is not None:
        assert dict(collections.Counter(e.label for e in examples)) == counts
    assert processor.last_read.num_skipped == 0


def test_stsb_scores_are_floats_within_zero_to_five():
    examples = get_processor("STS-B").get_dev_examples(shared_path("data/glue/STS-B"))
    scores = [e.label for e in examples]
    assert all(isinstance(s, float) for s in scores)
    assert min(scores) == 0.0 and max(scores) == 5.0
    assert examples[1].label == 4.75  # written "4.750" in the file


def test_task_metadata():
    assert [get_task_info(t).submission_file for t in (
        "cola", "sst-2", "mrpc", "sts-b", "qqp", "mnli", "mnli-mm", "qnli", "rte", "wnli",
        "ax")] == ["CoLA.tsv", "SST-2.tsv", "MRPC.tsv", "STS-B.tsv", "QQP.tsv", "MNLI-m.tsv",
                   "MNLI-mm.tsv", "QNLI.tsv", "RTE.tsv", "WNLI.tsv", "AX.tsv"]
    stsb = get_processor("sts-b")
    assert stsb.is_regression and stsb.num_labels == 1 and stsb.get_labels() == []
    assert get_processor("cola").info.primary_metric == "mcc"
    assert get_processor("mrpc").info.primary_metric == "acc_and_f1"
    assert get_processor("sts-b").info.primary_metric == "corr"
    assert get_processor("mnli").get_labels() == ["contradiction", "entailment", "neutral"]
    assert get_processor("mnli").info.companions == ("mnli-mm", "ax")
    assert get_processor("qnli").get_labels() == ["entailment", "not_entailment"]
    assert get_task_info("xnli").submission_file is None


def test_task_names_accept_common_spellings():
    assert canonical_task_name("SST-2") == canonical_task_name("sst2") == "sst-2"
    assert canonical_task_name("STSB") == "sts-b"
    assert canonical_task_name("MNLI_mismatched") == "mnli-mm"
    with pytest.raises(ValueError, match="unknown task 'glue'.*cola"):
        canonical_task_name("glue")


# ---- synthetic files in the exact GLUE layouts ------------------------------------------

def _write(path, rows, newline="\n"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes("".join("\t".join(r) + newline for r in rows).encode("utf-8"))
    return path


MNLI_TRAIN_HEADER = ["index", "promptID", "pairID", "genre", "sentence1_binary_parse",
                     "sentence2_binary_parse", "sentence1_parse", "sentence2_parse",
                     "sentence1", "sentence2", "label1", "gold_label"]
MNLI_DEV_HEADER = MNLI_TRAIN_HEADER[:10] + ["label1", "label2", "label3", "label4", "label5",
                                            "gold_label"]
MNLI_TEST_HEADER = MNLI_TRAIN_HEADER[:10]


def _mnli_row(i, s1, s2, labels):
    return [str(i), "31193", "31193n", "government", "( ( x ) )", "( y )", "(ROOT (S x))",
            "(ROOT (S y))", s1, s2] + labels


def _write_mnli(folder):
    _write(folder / "train.tsv", [MNLI_TRAIN_HEADER,
                                  _mnli_row(0, 'He said "hi.', "He spoke.", ["entailment"] * 2),
                                  _mnli_row(1, "A b.", "C d.", ["neutral", "neutral"])])
    for part, genre_text in (("matched", "Matched premise."), ("mismatched", "Mm premise.")):
        _write(folder / f"dev_{part}.tsv", [
            MNLI_DEV_HEADER,
            _mnli_row(0, genre_text, "Hyp 0.", ["contradiction"] * 5 + ["contradiction"]),
            _mnli_row(1, genre_text, "Hyp 1.", ["neutral"] * 5 + ["neutral"])])
        _write(folder / f"test_{part}.tsv", [MNLI_TEST_HEADER,
                                             _mnli_row(0, genre_text, "T 0.", []),
                                             _mnli_row(1, genre_text, "T 1.", []),
                                             _mnli_row(2, genre_text, "T 2.", [])])


def test_mnli_matched_and_mismatched(tmp_path):
    _write_mnli(tmp_path)
    matched, mismatched = get_processor("mnli"), get_processor("mnli-mm")
    train = matched.get_train_examples(tmp_path)
    assert train == [InputExample("train-0", 'He said "hi.', "He spoke.", "entailment"),
                     InputExample("train-1", "A b.", "C d.", "neutral")]
    assert [e.text_a for e in matched.get_dev_examples(tmp_path)] == ["Matched premise."] * 2
    assert [e.label for e in matched.get_dev_examples(tmp_path)] == ["contradiction", "neutral"]
    assert [e.text_a for e in mismatched.get_dev_examples(tmp_path)] == ["Mm premise."] * 2
    test_m = matched.get_test_examples(tmp_path)
    assert [(e.guid, e.text_b, e.label) for e in test_m] == [
        ("test-0", "T 0.", None), ("test-1", "T 1.", None), ("test-2", "T 2.", None)]
    assert mismatched.get_test_examples(tmp_path)[0].text_a == "Mm premise."


def test_qqp_layout(tmp_path):
    header = ["id", "qid1", "qid2", "question1", "question2", "is_duplicate"]
    _write(tmp_path / "train.tsv", [header, ["201359", "303345", "303346", "Why a?", "Why b?",
                                             "0"],
                                    ["172974", "266948", "175089", "Is c?", "What c?", "1"]])
    _write(tmp_path / "dev.tsv", [header, ["7", "1", "2", "Q1?", "Q2?", "1"]])
    _write(tmp_path / "test.tsv", [["id", "question1", "question2"], ["0", "T1?", "T2?"],
                                   ["1", "T3?", "T4?"]])
    qqp = get_processor("qqp")
    assert qqp.get_train_examples(tmp_path) == [
        InputExample("train-201359", "Why a?", "Why b?", "0"),
        InputExample("train-172974", "Is c?", "What c?", "1")]
    assert qqp.get_dev_examples(tmp_path) == [InputExample("dev-7", "Q1?", "Q2?", "1")]
    assert qqp.get_test_examples(tmp_path) == [InputExample("test-0", "T1?", "T2?"),
                                               InputExample("test-1", "T3?", "T4?")]


@pytest.mark.parametrize("task,columns,labels", [
    ("qnli", ["question", "sentence"], ["entailment", "not_entailment"]),
    ("rte", ["sentence1", "sentence2"], ["entailment", "not_entailment"]),
    ("wnli", ["sentence1", "sentence2"], ["0", "1"]),
])
def test_index_pair_label_layouts(tmp_path, task, columns, labels):
    header = ["index"] + columns + ["label"]
    for split in ("train", "dev"):
        _write(tmp_path / f"{split}.tsv", [header, ["0", "A one.", "B one.", labels[0]],
                                           ["1", "A two.", "B two.", labels[1]]])
    _write(tmp_path / "test.tsv", [["index"] + columns, ["0", "A t.", "B t."]])
    processor = get_processor(task)
    assert processor.get_labels() == labels
    assert processor.get_dev_examples(tmp_path) == [
        InputExample("dev-0", "A one.", "B one.", labels[0]),
        InputExample("dev-1", "A two.", "B two.", labels[1])]
    assert processor.get_test_examples(tmp_path) == [InputExample("test-0", "A t.", "B t.")]


def test_ax_reads_diagnostic_from_its_folder_or_beside_mnli(tmp_path):
    _write(tmp_path / "diagnostic" / "diagnostic.tsv",
           [["index", "sentence1", "sentence2"], ["0", "The cat sat.", "A cat sat."]])
    ax = get_processor("ax")
    expected = [InputExample("test-0", "The cat sat.", "A cat sat.")]
    assert ax.get_test_examples(tmp_path / "diagnostic") == expected
    (tmp_path / "MNLI").mkdir()
    assert ax.get_test_examples(tmp_path / "MNLI") == expected
    with pytest.raises(ValueError, match="only a test set"):
        ax.get_train_examples(tmp_path / "MNLI")


XNLI_HEADER = ["language", "gold_label", "sentence1_binary_parse", "sentence2_binary_parse",
               "sentence1_parse", "sentence2_parse", "sentence1", "sentence2", "promptID",
               "pairID", "genre", "label1", "label2", "label3", "label4", "label5",
               "sentence1_tokenized", "sentence2_tokenized", "match"]


def _xnli_row(language, label, s1, s2):
    return [language, label, "", "", "", "", s1, s2, "1", "1n", "fiction", label, label, label,
            label, label, s1, s2, "True"]


def _write_xnli(root, nested=False):
    mt = root / ("XNLI-MT-1.0" if nested else "") / "multinli"
    _write(mt / "multinli.train.de.tsv", [["premise", "hypo", "label"],
                                          ["Er sagte.", "Er sprach.", "contradictory"],
                                          ["Sie kam.", "Sie ging.", "neutral"]])
    for split in ("dev", "test"):
        _write(root / ("XNLI-1.0" if nested else "") / f"xnli.{split}.tsv", [
            XNLI_HEADER,
            _xnli_row("en", "entailment", f"{split} en.", "h en."),
            _xnli_row("de", "entailment", f"{split} de 1.", "h de 1."),
            _xnli_row("zh", "neutral", f"{split} zh.", "h zh."),
            _xnli_row("de", "contradiction", f"{split} de 2.", "h de 2.")])


@pytest.mark.parametrize("nested", [False, True], ids=["flat", "unzipped-folders"])
def test_xnli_language_filter_and_label_rename(tmp_path, nested):
    _write_xnli(tmp_path, nested)
    xnli = get_processor("xnli", language="de")
    assert xnli.get_train_examples(tmp_path) == [
        InputExample("train-0", "Er sagte.", "Er sprach.", "contradiction"),
        InputExample("train-1", "Sie kam.", "Sie ging.", "neutral")]
    assert xnli.get_dev_examples(tmp_path) == [
        InputExample("dev-1", "dev de 1.", "h de 1.", "entailment"),
        InputExample("dev-3", "dev de 2.", "h de 2.", "contradiction")]
    test = xnli.get_test_examples(tmp_path)
    assert [(e.text_a, e.label) for e in test] == [("test de 1.", "entailment"),
                                                   ("test de 2.", "contradiction")]
    assert xnli.last_read.num_skipped == 0  # other languages are not bad rows
    assert [e.text_a for e in get_processor("xnli").get_dev_examples(tmp_path)] == ["dev zh."]


def test_xnli_rejects_unknown_language():
    with pytest.raises(ValueError, match="unknown XNLI language 'xx'"):
        get_processor("xnli", language="xx")


# ---- malformed rows ----------------------------------------------------------------------

RTE_HEADER = ["index", "sentence1", "sentence2", "label"]


def _bad_rte(tmp_path):
    return _write(tmp_path / "train.tsv", [
        RTE_HEADER,
        ["0", "Good one.", "Fine.", "entailment"],          # line 2
        ["1", "Missing label.", "Here."],                  # line 3: missing column
        ["2", "Odd label.", "Here.", "maybe"],             # line 4: unknown label
        ["3", "   ", "Empty premise.", "entailment"],      # line 5: empty text
        ["4", "Extra.", "Stray\ttab.", "entailment"],      # line 6: 5 fields
        ["5", "Good two.", "Fine.", "not_entailment"],     # line 7
    ])


@pytest.mark.parametrize("line,reason", [(3, "3 fields where the header has 4"),
                                         (4, "unknown label 'maybe'"),
                                         (5, "empty text in column 'sentence1'"),
                                         (6, "5 fields where the header has 4")])
def test_malformed_row_error_names_file_and_line(tmp_path, line, reason):
    path = _bad_rte(tmp_path)
    lines = path.read_text().split("\n")
    # keep the header, row 2 and the one bad row under test, at its original line number
    kept = [text if i in (0, 1, line - 1) else "\t".join(["9", "Ok.", "Ok.", "entailment"])
            for i, text in enumerate(lines)]
    path.write_text("\n".join(kept))
    with pytest.raises(BadRowError) as info:
        get_processor("rte").get_train_examples(tmp_path)
    assert str(info.value).startswith(f"{path}:{line}: {reason}")
    assert info.value.path == str(path) and info.value.line == line
    assert "skip_bad_rows" in str(info.value)


def test_skip_bad_rows_skips_and_counts(tmp_path):
    path = _bad_rte(tmp_path)
    rte = get_processor("rte", skip_bad_rows=True)
    examples = rte.get_train_examples(tmp_path)
    assert [e.guid for e in examples] == ["train-0", "train-5"]
    stats = rte.last_read
    assert (stats.path, stats.split, stats.num_examples, stats.num_skipped) == (
        str(path), "train", 2, 4)
    assert [line for line, _ in stats.skipped] == [3, 4, 5, 6]


def test_stsb_non_numeric_score_is_a_bad_row(tmp_path):
    header = ["index", "genre", "filename", "year", "old_index", "source1", "source2",
              "sentence1", "sentence2", "score"]
    _write(tmp_path / "dev.tsv", [header,
                                  ["0", "g", "f", "2012", "0", "none", "none", "A.", "B.", "4.5"],
                                  ["1", "g", "f", "2012", "1", "none", "none", "C.", "D.", "n/a"],
                                  ["2", "g", "f", "2012", "2", "none", "none", "E.", "F.", "nan"]])
    with pytest.raises(BadRowError, match=r"dev.tsv:3: label 'n/a' in column 'score' is not"):
        get_processor("sts-b").get_dev_examples(tmp_path)
    stsb = get_processor("sts-b", skip_bad_rows=True)
    assert stsb.get_dev_examples(tmp_path) == [InputExample("dev-0", "A.", "B.", 4.5)]
    assert stsb.last_read.num_skipped == 2


def test_headerless_cola_row_with_missing_column(tmp_path):
    _write(tmp_path / "dev.tsv", [["gj04", "1", "", "Fine."], ["gj04", "0", "*"]])
    with pytest.raises(BadRowError, match=r"dev.tsv:2: 3 fields where this file's layout has 4"):
        get_processor("cola").get_dev_examples(tmp_path)


def test_wrong_file_fails_on_its_header_even_when_skipping(tmp_path):
    _write(tmp_path / "dev_matched.tsv", [RTE_HEADER, ["0", "A.", "B.", "entailment"]])
    with pytest.raises(DataFormatError, match=r"dev_matched.tsv:1: no label column "
                                              r"'gold_label' in the header") as info:
        get_processor("mnli", skip_bad_rows=True).get_dev_examples(tmp_path)
    assert not isinstance(info.value, BadRowError)


def test_blank_lines_inside_are_bad_rows_trailing_ones_are_not(tmp_path):
    path = tmp_path / "dev.tsv"
    path.write_text("sentence\tlabel\nGood .\t1\n\nAlso good .\t0\n\n\n")
    with pytest.raises(BadRowError, match=r"dev.tsv:3: blank line"):
        get_processor("sst-2").get_dev_examples(tmp_path)
    sst = get_processor("sst-2", skip_bad_rows=True)
    assert [e.text_a for e in sst.get_dev_examples(tmp_path)] == ["Good .", "Also good ."]
    assert sst.last_read.skipped == [(3, "blank line")]


def test_crlf_line_endings_and_bom(tmp_path):
    path = tmp_path / "dev.tsv"
    path.write_bytes(b"\xef\xbb\xbfQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\r\n"
                     b"1\t1\t2\tA .\tB .\r\n")
    assert get_processor("mrpc").get_dev_examples(tmp_path) == [
        InputExample("dev-0", "A .", "B .", "1")]


def test_undecodable_bytes_name_the_line(tmp_path):
    (tmp_path / "dev.tsv").write_bytes(b"sentence\tlabel\nok .\t1\nbad \xff .\t0\n")
    with pytest.raises(DataFormatError, match=r"dev.tsv:3: not UTF-8"):
        get_processor("sst-2", skip_bad_rows=True).get_dev_examples(tmp_path)


def test_missing_file_suggests_the_task_folder(tmp_path):
    _write(tmp_path / "MRPC" / "train.tsv", [["Quality", "#1 ID", "#2 ID", "#1 String",
                                              "#2 String"]])
    with pytest.raises(FileNotFoundError, match=r"mrpc: no train.tsv .*did you mean "
                                                + str(tmp_path / "MRPC")):
        get_processor("mrpc").get_train_examples(tmp_path)


def test_reads_through_tf_gfile_urls():
    import tensorflow as tf
    folder = "ram://bert_tf_test_glue/SST-2"
    tf.io.gfile.makedirs(folder)
    with tf.io.gfile.GFile(os.path.join(folder, "dev.tsv"), "wb") as f:
        f.write(b"sentence\tlabel\nfine .\t1\n")
    assert get_processor("sst-2").get_dev_examples(folder) == [
        InputExample("dev-0", "fine .", None, "1")]
