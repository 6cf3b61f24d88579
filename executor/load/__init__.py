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
- `job.py`     — one load: batches -> one `LoadTxn`, filter-ratio check, commit or abort.

The HTTP and MySQL-protocol sides live in server/ (stream_load.py, local_infile.py).
Upstream: Doris `StreamLoadContext`, `CsvReader`, `NewJsonReader`, `VFileScanner`.
"""
