"""SWAG examples from either csv layout of rowanz/swagaf.

* `train.csv` / `val.csv` / `test.csv`: `,video-id,fold-ind,startphrase,sent1,sent2,gold-source,
  ending0..ending3[,label]` (test files have no label).
* `train_full.csv` / `val_full.csv`: `video-id,fold-ind,startphrase,gold-ending,distractor-0..3,
  gold-source,gold-type,distractor-N-type..,sent1,sent2`. The choices are the gold ending and
  the first num_choices - 1 non-empty distractors (in the released train.csv, the endings are the
  gold one and distractors 0-2 for 73% of rows); the gold ending's position is a fixed
  pseudo-random function of (video-id, fold-ind), so labels are spread over the positions.

The layout is recognised from the header. Each choice is read as the pair
(sent1, sent2 + " " + ending), as in the BERT paper.
"""

import csv
import dataclasses
import io
import random
import zlib

from bert_tf import fileio

REGULAR_COLUMNS = ("video-id", "fold-ind", "sent1", "sent2", "ending0", "ending1", "ending2",
                   "ending3")
FULL_COLUMNS = ("video-id", "fold-ind", "sent1", "sent2", "gold-ending", "distractor-0",
                "distractor-1", "distractor-2", "distractor-3")


class SwagError(ValueError):
    """Malformed SWAG csv; the message names the file and line."""


@dataclasses.dataclass
class SwagExample:
    example_id: str       # "<video-id>/<fold-ind>"
    context: str          # sent1
    start: str            # sent2, the beginning of the sentence every ending completes
    endings: list
    label: int = None     # index of the right ending, None when unknown (test files)
    line: int = 0         # 1-based line of the row in its file

    def choice_texts(self):
        """(text_a, text_b) per ending."""
        return [(self.context, f"{self.start} {ending}".strip()) for ending in self.endings]


def detect_layout(header):
    """"regular" or "full" from a csv header row; raises SwagError otherwise."""
    names = set(header)
    if set(REGULAR_COLUMNS) <= names:
        return "regular"
    if set(FULL_COLUMNS) <= names:
        return "full"
    raise SwagError(f"header {header} is neither SWAG layout: expected columns "
                    f"{', '.join(REGULAR_COLUMNS)}[, label] (train.csv) or "
                    f"{', '.join(FULL_COLUMNS)} (train_full.csv)")


def gold_position(video_id, fold_ind, num_choices):
    """Where the gold ending goes among num_choices in the full layout (stable across runs)."""
    return random.Random(zlib.crc32(f"{video_id}/{fold_ind}".encode("utf-8"))).randrange(
        num_choices)


def _cell(row, column, where):
    value = row.get(column)
    if value is None:
        raise SwagError(f"{where}: missing column {column!r} (the row is short)")
    return value


def read_swag(path, num_choices=4, skip_bad_rows=False):
    """SwagExamples of a SWAG csv of either layout. `num_choices` applies to the full layout
    (2-5: the gold ending plus num_choices - 1 distractors); the regular layout has 4.

    Bad rows (wrong column count, label not 0-3, an empty ending, too few distractors) raise
    SwagError naming the line, or are skipped and counted (skip_bad_rows). Returns
    (examples, layout, number of skipped rows)."""
    path = str(path)
    if not fileio.exists(path):
        raise FileNotFoundError(f"{path}: no such SWAG file")
    if not 2 <= num_choices <= 5:
        raise ValueError(f"num_choices must be in 2..5, got {num_choices}")
    with fileio.open_binary(path) as f:
        try:
            text = f.read().decode("utf-8-sig")
        except UnicodeDecodeError as e:
            raise SwagError(f"{path}: not UTF-8 ({e})") from None
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        raise SwagError(f"{path}: empty file") from None
    try:
        layout = detect_layout(header)
    except SwagError as e:
        raise SwagError(f"{path}:{reader.line_num}: {e}") from None
    examples, skipped = [], 0
    has_label = layout == "regular" and "label" in header
    line = reader.line_num
    for cells in reader:
        where = f"{path}:{line + 1}"
        start_line, line = line + 1, reader.line_num
        if not any(c.strip() for c in cells):
            continue
        try:
            if len(cells) != len(header):
                raise SwagError(f"{where}: {len(cells)} columns, the header has {len(header)}")
            row = dict(zip(header, cells))
            examples.append(_example(row, layout, has_label, num_choices, where, start_line))
        except SwagError:
            if not skip_bad_rows:
                raise
            skipped += 1
    if not examples:
        raise SwagError(f"{path}: no usable rows" + (f" ({skipped} bad rows skipped)"
                                                     if skipped else ""))
    return examples, layout, skipped


def _example(row, layout, has_label, num_choices, where, line):
    video, fold = _cell(row, "video-id", where), _cell(row, "fold-ind", where)
    context, start = _cell(row, "sent1", where), _cell(row, "sent2", where)
    if layout == "regular":
        endings = [_cell(row, f"ending{i}", where) for i in range(4)]
        label = None
        if has_label:
            raw = row["label"].strip()
            if raw not in ("0", "1", "2", "3"):
                raise SwagError(f"{where}: label {raw!r} is not 0, 1, 2 or 3")
            label = int(raw)
    else:
        gold = _cell(row, "gold-ending", where)
        distractors = [d for d in (_cell(row, f"distractor-{i}", where) for i in range(4))
                       if d.strip()]
        if len(distractors) < num_choices - 1:
            raise SwagError(f"{where}: {len(distractors)} non-empty distractors, "
                            f"{num_choices - 1} needed for {num_choices} choices")
        endings = distractors[:num_choices - 1]
        label = gold_position(video, fold, num_choices)
        endings.insert(label, gold)
    for i, ending in enumerate(endings):
        if not ending.strip():
            raise SwagError(f"{where}: ending {i} is empty")
    return SwagExample(f"{video}/{fold}", context, start, endings, label, line)
