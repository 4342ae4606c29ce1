"""benchmarks/scheduler.py's growth rows: a ratio and its verdict, or none when the
smaller run's CPU read 0 (under /proc's clock tick)."""

from __future__ import annotations

from benchmarks.scheduler import growth_rows


def test_a_growth_within_the_target_passes_and_one_over_it_fails() -> None:
    rows = growth_rows({"basic": 1.0, "spread": 1.0}, {"basic": 1.2, "spread": 1.6}, 1000,
                       5000)

    assert rows == [
        ("scheduler CPU per pod, 1,000 -> 5,000 nodes: basic", "1.00 -> 1.20 ms (1.20x)",
         "<= 1.5x", "PASS"),
        ("scheduler CPU per pod, 1,000 -> 5,000 nodes: spread", "1.00 -> 1.60 ms (1.60x)",
         "<= 1.5x", "FAIL")]


def test_a_smaller_run_that_read_no_cpu_gives_no_ratio_and_no_verdict() -> None:
    [row] = growth_rows({"churn": 0.0}, {"churn": 0.6}, 25, 50)

    assert row[0] == "scheduler CPU per pod, 25 -> 50 nodes: churn"
    assert "no ratio" in row[1] and row[3] == ""


def test_a_workload_measured_at_one_size_only_has_no_row() -> None:
    assert growth_rows({}, {"basic": 1.0}, 1000, 5000) == []
