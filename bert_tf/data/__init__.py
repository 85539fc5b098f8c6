"""Input pipelines and dataset tooling: pre-training data, SQuAD, classification tasks."""
