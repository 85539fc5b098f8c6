"""Session-scoped fixtures shared by several test files (see conftest.py)."""
