"""The OK a committed load answers (server/statements/outcomes.py load_ok), over the wire:
INSERT and DELETE give Doris' `{'label':'..', 'status':'VISIBLE', 'txnId':'..'}` info, and
the INSERT is listed by SHOW LOAD under that label (read from the outcome, not its text)."""

from __future__ import annotations

import re

INFO = re.compile(r"^\{'label':'(?P<label>[^']+)', 'status':'VISIBLE', 'txnId':'(?P<txn>\d+)'\}$")


def _info(conn) -> re.Match[str]:
    """The OK's info string (length-encoded, as Doris sends it; pymysql keeps the prefix)."""
    raw = conn._result.message
    assert raw and raw[0] == len(raw) - 1, raw
    done = INFO.match(raw[1:].decode())
    assert done is not None, raw
    return done


def test_insert_and_delete_answer_the_load_ok(db_conn) -> None:
    with db_conn.cursor() as cur:
        cur.execute("CREATE TABLE t (k INT, v INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) "
                    "BUCKETS 1 PROPERTIES ('replication_num' = '1')")
        assert cur.execute("INSERT INTO t WITH LABEL lbl_ok_1 VALUES (1, 10), (2, 20)") == 2
        inserted = _info(db_conn)
        assert inserted["label"] == "lbl_ok_1"
        cur.execute("SHOW LOAD WHERE LABEL = 'lbl_ok_1'")
        row = dict(zip([d[0] for d in cur.description], cur.fetchone()))
        assert (row["Label"], row["State"], row["Type"]) == ("lbl_ok_1", "FINISHED", "INSERT")
        assert cur.execute("DELETE FROM t WHERE k = 1") == 0
        deleted = _info(db_conn)
        assert int(deleted["txn"]) > int(inserted["txn"])
        cur.execute("SELECT k, v FROM t")
        assert cur.fetchall() == ((2, 20),)
