"""Shared benchmark harness behind `bench/run.py`: data sets, loading as users load (Stream Load
over HTTP in chunks, multi-row INSERT), the file-backed DuckDB side, the alternating query
runner, the concurrency and fixed-cost probes and the RESULTS.md writer. One module per concern;
the suites (ssb, ssb-flat, tpch) share the runner in suites.py.
"""
