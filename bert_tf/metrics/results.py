"""google-research's `eval_results.txt` (one sorted `key = value` line per metric), the
multi-label threshold recorded in it, and the classifier's `confusion_matrix.tsv`."""

import os

from bert_tf import fileio


def write_eval_results(path, results):
    """Writes `results` as sorted "key = value" lines, atomically."""
    text = "".join(f"{key} = {results[key]}\n" for key in sorted(results))
    fileio.atomic_write_text(path, text)
    return str(path)


def read_eval_results(path):
    """Parses an eval_results.txt back to {key: int | float | str}."""
    results = {}
    with fileio.open_binary(path) as f:
        for number, raw in enumerate(f, start=1):
            line = raw.decode("utf-8").rstrip("\r\n")
            if not line.strip():
                continue
            key, sep, value = line.partition(" = ")
            if not sep or not key:
                raise ValueError(f"{path}:{number}: expected 'key = value', got {line!r}")
            for convert in (int, float):
                try:
                    value = convert(value)
                    break
                except ValueError:
                    pass
            results[key] = value
    return results


def saved_threshold(path):
    """The `threshold` of the eval_results.txt in folder `path` (or beside the checkpoint
    prefix `path`), or None."""
    if not path:
        return None
    folder = path if fileio.isdir(path) else os.path.dirname(str(path))
    results = os.path.join(folder, "eval_results.txt")
    if not fileio.exists(results):
        return None
    value = read_eval_results(results).get("threshold")
    return float(value) if isinstance(value, (int, float)) else None


def write_confusion_matrix(path, confusion, label_names):
    """Writes a confusion matrix (rows gold, columns predicted) as TSV, atomically: a header
    "gold/predicted" + the label names, then one row of counts per gold label led by its name
    (tabs and line breaks in names become spaces)."""
    blank = str.maketrans("\t\r\n", "   ")
    names = [str(name).translate(blank) for name in label_names]
    lines = ["\t".join(["gold/predicted"] + names)]
    lines += ["\t".join([name] + [str(int(count)) for count in row])
              for name, row in zip(names, confusion)]
    fileio.atomic_write_text(path, "\n".join(lines) + "\n")
    return str(path)
