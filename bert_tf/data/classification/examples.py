"""The example type every classification reader returns, and the errors they raise."""

import dataclasses


@dataclasses.dataclass(frozen=True)
class InputExample:
    """One sentence or sentence pair.

    guid: "<split>-<id>", the id being the file's own index column where it has one (so a
      GLUE test guid carries the index the submission file needs), else the 0-based data row.
    label: a label string from `get_labels()`, a float for regression, None on test rows.
    """

    guid: str
    text_a: str
    text_b: str = None
    label: object = None


class DataFormatError(ValueError):
    """A data file is unusable as a whole (missing column in the header, undecodable bytes,
    empty file). Never skipped; the message names the file and line."""

    def __init__(self, path, line, reason):
        self.path, self.line, self.reason = str(path), line, reason
        super().__init__(f"{path}:{line}: {reason}")


class BadRowError(DataFormatError):
    """One malformed row (missing or extra columns, unknown label, empty text). Raised unless
    the processor was built with skip_bad_rows=True, which skips and counts such rows."""

    def __init__(self, path, line, reason):
        super().__init__(path, line, reason)
        self.args = (f"{path}:{line}: {reason} (pass skip_bad_rows=True, or --skip_bad_rows, "
                     f"to skip and count such rows)",)


@dataclasses.dataclass
class ReadStats:
    """What one file read produced: example count and the (line, reason) of skipped rows."""

    path: str
    split: str
    num_examples: int = 0
    skipped: list = dataclasses.field(default_factory=list)

    @property
    def num_skipped(self):
        return len(self.skipped)
