"""SQL syntax: ShaleDB's sqlglot Doris dialect (tokenizer, parser, custom nodes,
generator) and the MySQL-only type spellings. Knows nothing of catalogs or binding."""
