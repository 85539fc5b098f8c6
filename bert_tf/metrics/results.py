"""google-research's `eval_results.txt` (one sorted `key = value` line per metric), and the
classifier's `confusion_matrix.tsv`."""

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
