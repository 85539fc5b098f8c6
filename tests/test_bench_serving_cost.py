"""benchmarks/bench_serving_cost.py's pure logic: the FLOP count its GFLOP/s rest on, the
A B / B A process order, and the requests every variant gets."""

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_serving_cost.py"
_spec = importlib.util.spec_from_file_location("bench_serving_cost", SCRIPT)
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

BERT_BASE = {"num_hidden_layers": 12, "hidden_size": 768, "intermediate_size": 3072,
             "id2label": {"0": "LABEL_0", "1": "LABEL_1"}}


def test_bert_base_pair_of_80_tokens_is_13_8_gflop():
    assert round(bench.flops_per_pair(BERT_BASE, 80) / 1e9, 1) == 13.8


def test_flops_count_projections_feed_forward_attention_pooler_and_classifier():
    one_layer = {"num_hidden_layers": 1, "hidden_size": 4, "intermediate_size": 16,
                 "id2label": {"0": "a", "1": "b", "2": "c"}}
    s, h, i = 10, 4, 16
    assert bench.flops_per_pair(one_layer, s) == (8 * s * h * h + 4 * s * h * i + 4 * s * s * h
                                                  + 2 * h * h + 2 * h * 3)


def test_rounds_alternate_forward_and_reversed_order():
    jobs = ["a", "b", "c"]
    assert [bench.round_order(jobs, r) for r in range(3)] == [["a", "b", "c"], ["c", "b", "a"],
                                                              ["a", "b", "c"]]


def test_request_plan_gives_single_rows_and_full_slices_inside_the_data():
    singles, slices = bench.request_plan(408, requests=40, batches=8, batch_size=32)
    assert len(singles) == 40 and all(hi == lo + 1 and 0 <= lo < 408 for lo, hi in singles)
    assert len(slices) == 8 and all(hi - lo == 32 and hi <= 408 for lo, hi in slices)
