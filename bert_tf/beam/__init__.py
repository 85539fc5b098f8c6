"""The jobs that grow with the data, as Apache Beam pipelines (docs/scale.md):

  create_pretraining_data.py --beam_pipeline_options=...    bert_tf.beam.pretraining_data
  python -m bert_tf.predict --beam_pipeline_options=...     bert_tf.beam.prediction

Without the flag neither imports Beam. With it, Beam must be installed
(`pip install 'bert_tf[beam]'`); `runtime` says so in one line when it is not, parses the
flag and reaches files through Beam's file systems (local, gs://, s3://, hdfs://).
"""
