"""The maths of `make bench-gpu-path`: vLLM's metrics text, a run's figures, the totals and the ratio."""

from __future__ import annotations

import pytest

from bench.gpu_path_figures import (
    FINISHED,
    GENERATED,
    PROMPT,
    RUNNING,
    WAITING,
    RunFigures,
    Sample,
    parse_metrics,
    ratio,
    run_figures,
    table,
    totals,
)

# As vLLM 0.32 writes them: HELP/TYPE lines, labels, a counter split by finish reason, a histogram, a NaN.
METRICS = """\
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="tiny-vlm"} 3.0
vllm:num_requests_waiting{engine="0",model_name="tiny-vlm"} 1.0
vllm:generation_tokens_total{engine="0",model_name="tiny-vlm"} 1234.0
vllm:prompt_tokens_total{engine="0",model_name="tiny-vlm"} 5.5e3
vllm:request_success_total{engine="0",finished_reason="stop",model_name="tiny-vlm"} 20.0
vllm:request_success_total{engine="0",finished_reason="length",model_name="tiny-vlm"} 4.0
vllm:e2e_request_latency_seconds_bucket{le="0.3",model_name="tiny-vlm"} 7.0
vllm:cache_config_info{block_size="16"} NaN
python_gc_objects_collected_total{generation="0"} 118.0
"""


def test_metrics_are_summed_over_labels_and_only_vllm_series_kept() -> None:
    totals_ = parse_metrics(METRICS)
    assert totals_[RUNNING] == 3.0 and totals_[WAITING] == 1.0
    assert totals_[GENERATED] == 1234.0 and totals_[PROMPT] == 5500.0
    assert totals_[FINISHED] == 24.0  # stop + length
    assert "vllm:cache_config_info" not in totals_  # NaN adds nothing
    assert not any(name.startswith("python_") for name in totals_)


def test_a_sample_without_the_gauges_reads_as_idle() -> None:
    assert Sample.of(1.0, parse_metrics(METRICS)) == Sample(at=1.0, running=3.0, waiting=1.0)
    assert Sample.of(2.0, {}) == Sample(at=2.0, running=0.0, waiting=0.0)


def test_a_run_counts_the_counters_between_readings_and_the_samples_inside_its_window() -> None:
    samples = [Sample(0.5, 0, 0),  # before the run: not counted
               Sample(1.0, 0, 0), Sample(1.1, 4, 2), Sample(1.2, 8, 0), Sample(1.3, 0, 1), Sample(1.4, 0, 0),
               Sample(3.5, 0, 0)]  # after it
    run = run_figures("pagemill", 12, 1.0, 3.0, {GENERATED: 100, FINISHED: 3, PROMPT: 10},
                      {GENERATED: 700, FINISHED: 15, PROMPT: 1210}, samples)
    assert (run.pages, run.seconds, run.requests, run.generated_tokens, run.prompt_tokens) == (12, 2.0, 12, 600, 1200)
    assert run.pages_per_s == 6.0 and run.tokens_per_s == 300.0
    # idle: nothing running and nothing waiting (1.3 had a request waiting to be scheduled)
    assert (run.samples, run.idle_samples, run.idle_share) == (5, 2, 0.4)
    assert run.mean_running == pytest.approx(12 / 5) and run.mean_waiting == pytest.approx(3 / 5)
    # the server first had a request at 1.1 and last at 1.3: 0.1 s of start-up, 1.7 s of tail
    assert run.to_first_s == pytest.approx(0.1) and run.after_last_s == pytest.approx(1.7)


def test_a_run_with_no_sample_or_no_time_divides_by_nothing() -> None:
    run = run_figures("direct", 3, 2.0, 2.0, {}, {}, [])
    assert (run.pages_per_s, run.tokens_per_s, run.idle_share, run.mean_running) == (0.0, 0.0, 0.0, 0.0)
    assert (run.to_first_s, run.after_last_s) == (0.0, 0.0)
    with pytest.raises(ValueError):
        run_figures("direct", 3, 2.0, 1.0, {}, {}, [])


def figures(way: str, pages: int, seconds: float, tokens: float, idle: int, samples: int) -> RunFigures:
    return RunFigures(way=way, pages=pages, seconds=seconds, requests=pages, prompt_tokens=0,
                      generated_tokens=tokens, samples=samples, idle_samples=idle, mean_running=1, mean_waiting=0)


def test_totals_are_summed_pages_over_summed_seconds_not_a_mean_of_rates() -> None:
    runs = [figures("direct", 24, 2.0, 480, 0, 20), figures("pagemill", 24, 3.0, 480, 6, 30),
            figures("direct", 24, 6.0, 480, 10, 60), figures("pagemill", 24, 5.0, 480, 4, 50)]
    direct, through = totals("direct", runs), totals("pagemill", runs)
    assert (direct.runs, direct.pages, direct.seconds) == (2, 48, 8.0)
    assert direct.pages_per_s == 6.0  # a mean of the two rates (12 and 4) would say 8
    assert through.pages_per_s == 6.0 and through.tokens_per_s == 120.0
    assert through.idle_share == pytest.approx(10 / 80)
    assert ratio(through.pages_per_s, direct.pages_per_s) == 1.0
    assert ratio(5.0, 0.0) == 0.0


def test_the_table_lists_each_run_then_both_totals_and_the_ratio() -> None:
    runs = [figures("direct", 24, 2.0, 480, 0, 20), figures("pagemill", 24, 2.5, 480, 5, 25)]
    lines = table(runs)
    assert len(lines) == 2 + len(runs) + 3
    assert lines[2].startswith("| 1 | direct | 24 | 2.00 | 12.00 |")
    assert "5/25 (20 %)" in lines[3]
    assert "**pagemill / direct** | | | **0.80** |" in lines[-1]  # 9.6 / 12 pages/s
    assert all(line.count("|") == lines[0].count("|") for line in lines)


def test_several_pagemill_ways_each_get_their_totals_and_their_ratio_to_the_direct_client() -> None:
    runs = [figures("direct", 24, 2.0, 480, 0, 20), figures("pagemill, a", 24, 2.5, 480, 5, 25),
            figures("pagemill, b", 24, 4.0, 480, 5, 25), figures("direct", 24, 2.0, 480, 0, 20),
            figures("pagemill, b", 24, 4.0, 480, 5, 25), figures("pagemill, a", 24, 2.5, 480, 5, 25)]
    lines = table(runs)
    assert len(lines) == 2 + len(runs) + 3 + 2
    assert [line.split("|")[2].strip() for line in lines[-5:-2]] == ["**direct**", "**pagemill, a**",
                                                                     "**pagemill, b**"]
    assert "**pagemill, a / direct** | | | **0.80** |" in lines[-2]  # 9.6 / 12 pages/s
    assert "**pagemill, b / direct** | | | **0.50** |" in lines[-1]  # 6 / 12
    assert all(line.count("|") == lines[0].count("|") for line in lines)
