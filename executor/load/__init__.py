"""Loading files into tables: the part every load path shares (Stream Load over HTTP, MySQL
LOAD DATA, INSERT .. SELECT FROM local(), the `shaledb load` CLI, the Spark data source).

- `spec.py`    — Doris' load properties (the Stream Load headers, LOAD DATA's clauses and
                 PROPERTIES, the file table functions' arguments) validated into a `LoadSpec`;
                 `LoadFailed`, `LoadStats`.
- `format_options.py` — the format properties (format, separators, enclose, JSON options,
                 compress_type) validated into `FormatOptions`.
- `sources.py` — a byte stream in a file format -> a stream of Arrow record batches (never the
                 whole body in memory), dispatching to `csv_source.py`, `json_source.py`,
                 `columnar_source.py` (parquet/ORC/Arrow), after `decompress.py`; `chunks.py`
                 reads the body in blocks of whole lines.
- `convert.py` — file columns -> the table's column types, bad values named per row.
- `mapping.py` — Doris' `columns` (temporary columns, `col = expr` mappings compiled by the
                 engine), `where` (unselected rows) and `partitions`.
- `job.py`     — one load: batches -> one `LoadTxn`, filter-ratio check, commit, precommit
                 (two-phase) or abort.
- `txn_options.py` — the transaction properties (two_phase_commit, timeout, exec_mem_limit,
                 group_commit) validated into `TxnOptions`.
- `group_load.py` — a load whose rows join the table's group commit.
- `error_log.py` — the filtered rows of a load, in the file behind its ErrorURL.
- `records.py` — every load's record (SHOW LOAD / STREAM LOAD, get_load_state, /metrics):
                 `record_load`, `record_insert`, `record_file_load`.

The HTTP and MySQL-protocol sides live in server/ (stream_load.py, local_infile.py,
load_status.py: `_stream_load_2pc`, get_load_state, error logs, the SHOW statements).
Upstream: Doris `StreamLoadContext`, `CsvReader`, `NewJsonReader`, `VFileScanner`.
"""
