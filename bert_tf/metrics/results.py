"""google-research's `eval_results.txt`: one sorted `key = value` line per metric."""

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
