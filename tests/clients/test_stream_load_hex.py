"""Doris refuses `0x10` as an integer (NULL outside strict mode, a filtered row in strict
mode); Arrow's string-to-integer cast would read 16, so a column holding `0x` takes the
per-value path (executor/load/convert.py `has_hex_prefix`)."""

from __future__ import annotations

from support.stream_load import curl_load


def test_hexadecimal_is_not_a_number(server, db, db_conn, tmp_path) -> None:
    with db_conn.cursor() as cur:
        cur.execute("""CREATE TABLE hex (k INT NOT NULL, b BIGINT, t TINYINT) DUPLICATE KEY(k)
            DISTRIBUTED BY HASH(k) BUCKETS 1 PROPERTIES ("replication_num" = "1")""")
    path = tmp_path / "hex.csv"
    path.write_text("1,0x10,0x7\n2,0X1f,7\n3,17,0\n")
    code, _, body = curl_load(server, db, "hex", path, "column_separator:,")
    assert code == 200 and body["Status"] == "Success", body
    with db_conn.cursor() as cur:
        cur.execute("SELECT k, b, t FROM hex ORDER BY k")
        assert cur.fetchall() == ((1, None, None), (2, None, 7), (3, 17, 0))
    code, _, body = curl_load(server, db, "hex", path, "column_separator:,",
                              "strict_mode:true", "max_filter_ratio:0.9")
    assert body["Status"] == "Success" and body["NumberFilteredRows"] == 2, body
    assert "0x10" in body["FirstErrorMsg"] or "0X1f" in body["FirstErrorMsg"], body
