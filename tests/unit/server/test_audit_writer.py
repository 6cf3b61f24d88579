"""server/audit.py on its own: Doris' statement handling (password masking, truncation), the
rotating file handler's names and retention, and the queue that keeps the writer off the
statement's path."""

from __future__ import annotations

import logging
import os
import re
import time
from pathlib import Path

import pytest

from server.audit import (
    AuditEvent,
    AuditFileHandler,
    AuditFormatter,
    AuditLog,
    AuditSettings,
    delete_age_seconds,
    handle_stmt,
    mask_passwords,
)


@pytest.mark.parametrize(("sql", "masked", "secrets"), [
    ("CREATE USER 'u' IDENTIFIED BY 'p1'", "CREATE USER 'u' IDENTIFIED BY '*XXX'", ("p1",)),
    ("create user u identified with caching_sha2_password by \"p2\"",
     "create user u identified with caching_sha2_password by '*XXX'", ("p2",)),
    ("ALTER USER u IDENTIFIED BY PASSWORD '*ABCD'", "ALTER USER u IDENTIFIED BY PASSWORD '*XXX'",
     ("*ABCD",)),
    ("SET PASSWORD FOR 'u'@'%' = PASSWORD('p3')", "SET PASSWORD FOR 'u'@'%' = PASSWORD('*XXX')",
     ("p3",)),
    ("SET PASSWORD = 'hash'", "SET PASSWORD = '*XXX'", ("hash",)),
    ("CREATE USER u IDENTIFIED BY 'it''s'", "CREATE USER u IDENTIFIED BY '*XXX'", ("it''s",)),
    ("CREATE USER u IDENTIFIED BY 'unterminated", "CREATE USER u IDENTIFIED BY '*XXX'",
     ("unterminated",)),
    ("SELECT 1", "SELECT 1", ()),
])
def test_passwords_are_masked(sql: str, masked: str, secrets: tuple[str, ...]) -> None:
    assert mask_passwords(sql) == (masked, secrets)


def test_error_messages_of_password_statements_are_scrubbed() -> None:
    formatter = AuditFormatter()
    event = AuditEvent(stmt="CREATE USER u IDENTIFIED BY 'Secret99' oops", state="ERR",
                       error_code=1064, error_message="syntax error near 'Secr")
    line = formatter.format(logging.makeLogRecord({"msg": event}))
    assert "Secr" not in line
    assert "|ErrorMessage=syntax error near '*XXX|" in line


def test_statements_are_cut_at_max_bytes_and_escaped() -> None:
    assert handle_stmt("SELECT 1\n\tFROM t", 4096) == "SELECT 1\\n\\tFROM t"
    cut = handle_stmt("SELECT '" + "日" * 10 + "'", 12)  # 8 bytes + one 3-byte char + 1 byte
    assert cut == "SELECT '日 ... /* truncated. audit_plugin_max_sql_length=12 */"


def test_lines_have_doris_layout() -> None:
    event = AuditEvent(client="10.0.0.1:5000", user="root", db="d", state="EOF", stmt="select 1",
                       return_rows=1, stmt_id=3, query_id="a-b", is_query=True, fe_ip="10.0.0.2")
    line = AuditFormatter().format(logging.makeLogRecord({"msg": event}))
    assert re.fullmatch(
        r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} \[query\] \|Client=10\.0\.0\.1:5000\|User=root"
        r"\|Ctl=internal\|Db=d\|State=EOF\|ErrorCode=0\|ErrorMessage=\|Time\(ms\)=0\|ScanBytes=0"
        r"\|ScanRows=0\|ReturnRows=1\|StmtId=3\|QueryId=a-b\|IsQuery=true\|isNereids=false"
        r"\|feIp=10\.0\.0\.2\|Stmt=select 1\|CpuTimeMS=0\|ShuffleSendBytes=0\|ShuffleSendRows=0"
        r"\|SqlHash=[0-9a-f]{32}\|peakMemoryBytes=0\|SqlDigest=\|TraceId=\|WorkloadGroup=normal"
        r"\|FuzzyVariables=", line)


def test_delete_age_syntax() -> None:
    assert delete_age_seconds("30d") == 30 * 86400
    assert delete_age_seconds("12h") == 12 * 3600
    with pytest.raises(ValueError):
        delete_age_seconds("30 days")


def _record(n: int) -> logging.LogRecord:
    return logging.makeLogRecord({"msg": AuditEvent(stmt=f"SELECT {n}", stmt_id=n)})


def test_daily_rollover_names_and_age_retention(tmp_path: Path) -> None:
    handler = AuditFileHandler(tmp_path / "fe.audit.log",
                               AuditSettings(audit_log_delete_age="7d", audit_log_roll_num=5))
    handler.setFormatter(AuditFormatter())
    ancient = tmp_path / "fe.audit.log.20200101-1"
    ancient.write_text("old\n")
    old = time.time() - 8 * 86400
    os.utime(ancient, (old, old))
    handler.emit(_record(1))
    handler.rolloverAt = int(time.time()) - 1  # midnight has passed
    handler.emit(_record(2))
    handler.close()
    yesterday = time.strftime("%Y%m%d", time.localtime(time.time() - 86400))
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["fe.audit.log", f"fe.audit.log.{yesterday}-1"]  # the 8-day-old one is gone
    assert "SELECT 1" in (tmp_path / f"fe.audit.log.{yesterday}-1").read_text()
    assert "SELECT 2" in (tmp_path / "fe.audit.log").read_text()


def test_size_rollover_keeps_roll_num_files_per_period(tmp_path: Path) -> None:
    handler = AuditFileHandler(tmp_path / "fe.audit.log", AuditSettings(audit_log_roll_num=2),
                               max_bytes=1000)
    handler.setFormatter(AuditFormatter())
    for n in range(12):  # ~380 bytes a line: two lines a file
        handler.emit(_record(n))
    handler.close()
    today = time.strftime("%Y%m%d")
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["fe.audit.log", f"fe.audit.log.{today}-4", f"fe.audit.log.{today}-5"]
    assert all((tmp_path / n).stat().st_size <= 1000 for n in names)
    assert "SELECT 9" in (tmp_path / f"fe.audit.log.{today}-5").read_text()


def test_a_blocked_writer_never_blocks_statements(tmp_path: Path) -> None:
    audit = AuditLog(tmp_path, AuditSettings(audit_event_log_queue_size=2))
    with audit.file_handler.lock:  # the writer thread stalls (a slow disk) ...
        start = time.monotonic()
        for n in range(6):
            audit.log(AuditEvent(stmt=f"SELECT {n}"))
        assert time.monotonic() - start < 1.0  # ... statements do not wait for it
        assert audit.dropped >= 3  # past the queue's size, events are dropped and counted
    audit.close()
    written = (tmp_path / "fe.audit.log").read_text().splitlines()
    assert len(written) == 6 - audit.dropped


def test_slow_statements_get_a_slow_query_line(tmp_path: Path) -> None:
    audit = AuditLog(tmp_path, AuditSettings(qe_slow_log_ms=100))
    audit.log(AuditEvent(stmt="SELECT fast", query_time_ms=100))
    audit.log(AuditEvent(stmt="SELECT slow", query_time_ms=101))
    audit.close()
    kinds = [(re.search(r"\[(\w+)\]", line).group(1), line.split("|Stmt=")[1].split("|")[0])
             for line in (tmp_path / "fe.audit.log").read_text().splitlines()]
    assert kinds == [("query", "SELECT fast"), ("query", "SELECT slow"),
                     ("slow_query", "SELECT slow")]


def test_lines_reach_the_file_without_close_in_statement_order(tmp_path: Path) -> None:
    """The writer batches events (one wake-up per flush interval) but still writes every line
    of a burst, in order, while the log stays open."""
    audit = AuditLog(tmp_path, flush_seconds=0.01)
    try:
        for n in range(50):
            audit.log(AuditEvent(stmt=f"SELECT {n}"))
        path = tmp_path / "fe.audit.log"
        for _ in range(2000):  # waits for the lines (bounded), asserts nothing about time
            lines = path.read_text().splitlines() if path.exists() else []
            if len(lines) >= 50:
                break
            time.sleep(0.01)
        stmts = [line.split("|Stmt=")[1].split("|")[0] for line in lines]
        assert stmts == [f"SELECT {n}" for n in range(50)]
    finally:
        audit.close()
    assert audit.dropped == 0
