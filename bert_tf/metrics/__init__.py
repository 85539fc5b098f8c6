"""Task metrics: SQuAD (squad.py) and GLUE-style classification (classification.py)."""
