"""The CSV block reader (executor/load/csv_source.py `_block_batches`: integer columns parsed
straight to their type, a block that does not parse so read again as text) loads exactly what
the streaming text reader loads: the same file loaded with `enclose` (which takes the
streaming reader; the data holds no quotes) gives the same rows, the same filtered rows and
the same reasons, in and out of strict mode, for integers with spaces, signs, leading zeros,
hex, empty fields, words, out-of-range values, NULLs for NOT NULL columns and lines with the
wrong number of columns, spread over several 1 MiB blocks."""

from __future__ import annotations

import random

import pytest
import requests
from support.stream_load import curl_load

# odd integers the typed parse takes (the first half of the file: those blocks stay typed) and
# the ones it refuses (the second half: text from the first such block on)
PARSED = [" 12", "12 ", "007", "0x10", "-0", "\\N"]
REFUSED = ["+5", "", "abc", "1.5", "99999999999", "300", "-129"]


def _write(path, rows: int, seed: int) -> None:
    rng = random.Random(seed)
    with path.open("w") as f:
        for i in range(rows):
            tiny, small, big = rng.randrange(-128, 128), rng.randrange(-999, 999), i * 7919
            nn = i  # NOT NULL INT
            if rng.random() < 0.002:  # a rare odd value in one of the integer columns
                col = rng.randrange(4)
                odd = rng.choice(PARSED if i < rows // 2 else PARSED + REFUSED)
                tiny, small, nn, big = [odd if c == col else v
                                        for c, v in enumerate((tiny, small, nn, big))]
            line = f"{tiny},{small},{nn},{big},s{i % 31},2024-01-{1 + i % 28:02d}"
            if rng.random() < 0.0005:
                line = line.rsplit(",", 2)[0]  # too few columns
            f.write(line + "\n")


@pytest.mark.parametrize("strict", ["false", "true"])
def test_block_reader_loads_what_the_streaming_reader_loads(server, db, db_conn, tmp_path,
                                                            strict) -> None:
    with db_conn.cursor() as cur:
        for name in ("blocks", "stream"):
            cur.execute(f"""CREATE TABLE {name} (t TINYINT, s SMALLINT, n INT NOT NULL,
                b BIGINT, v VARCHAR(8), d DATE) DUPLICATE KEY(t)
                DISTRIBUTED BY HASH(n) BUCKETS 3 PROPERTIES ("replication_num" = "1")""")
    path = tmp_path / "ints.csv"
    _write(path, 200_000, seed=3)
    assert path.stat().st_size > 3 * (1 << 20)  # several blocks
    bodies = {}
    for name, extra in (("blocks", []), ("stream", ['enclose:"'])):
        code, _, body = curl_load(server, db, name, path, "column_separator:,",
                                  "max_filter_ratio:0.5", f"strict_mode:{strict}", *extra)
        assert code == 200 and body["Status"] == "Success", body
        bodies[name] = body
    for key in ("NumberTotalRows", "NumberLoadedRows", "NumberFilteredRows"):
        assert bodies["blocks"][key] == bodies["stream"][key], key
    assert bodies["blocks"]["NumberFilteredRows"] > 0
    logs = {name: requests.get(b["ErrorURL"], timeout=30).text.splitlines()
            for name, b in bodies.items()}
    assert sorted(logs["blocks"]) == sorted(logs["stream"])
    with db_conn.cursor() as cur:
        got = {}
        for name in ("blocks", "stream"):
            cur.execute(f"SELECT t, s, n, b, v, d FROM {name} ORDER BY n, b, t, s")
            got[name] = cur.fetchall()
    assert len(got["blocks"]) == bodies["blocks"]["NumberLoadedRows"]
    assert got["blocks"] == got["stream"]
    # the odd values really were there: some became NULL (non-strict) or were filtered
    with db_conn.cursor() as cur:
        cur.execute("SELECT count(*) - count(t), count(*) - count(b) FROM blocks")
        nulls = cur.fetchone()
    assert strict == "true" or sum(nulls) > 0


def test_hexadecimal_is_not_a_number_whichever_reader(server, db, db_conn, tmp_path) -> None:
    """Doris refuses `0x10` as an integer (NULL outside strict mode); Arrow's parsers would
    read 16, whether the column is cast from text or parsed as an integer."""
    with db_conn.cursor() as cur:
        cur.execute("""CREATE TABLE hex (k INT NOT NULL, b BIGINT) DUPLICATE KEY(k)
            DISTRIBUTED BY HASH(k) BUCKETS 1 PROPERTIES ("replication_num" = "1")""")
    path = tmp_path / "hex.csv"
    path.write_text("1,0x10\n2,0X1f\n3,17\n")
    for extra in ([], ['enclose:"']):
        code, _, body = curl_load(server, db, "hex", path, "column_separator:,", *extra)
        assert code == 200 and body["Status"] == "Success", body
    with db_conn.cursor() as cur:
        cur.execute("SELECT k, b FROM hex ORDER BY k, b")
        assert cur.fetchall() == ((1, None), (1, None), (2, None), (2, None), (3, 17), (3, 17))
