"""conf/shaledb.toml: the shipped file equals the built-in defaults; bad values are refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from server.config import DEFAULT_CONF, Config, ConfigError, load_config
from storage.page_cache import parse_limit, physical_memory


def test_shipped_file_matches_defaults() -> None:
    assert load_config(DEFAULT_CONF) == Config()


def test_page_cache_limit_forms(tmp_path: Path) -> None:
    conf = tmp_path / "c.toml"
    conf.write_text('[storage]\nstorage_page_cache_limit = "512M"\n')
    assert parse_limit(load_config(conf).storage_page_cache_limit) == 512 << 20
    assert parse_limit("20%") == int(physical_memory() * 0.2)
    conf.write_text('[storage]\nstorage_page_cache_limit = "lots"\n')
    with pytest.raises(ConfigError, match="storage_page_cache_limit"):
        load_config(conf)


def test_unknown_setting_is_refused(tmp_path: Path) -> None:
    conf = tmp_path / "c.toml"
    conf.write_text("[storage]\nno_such_thing = 1\n")
    with pytest.raises(ConfigError, match="unknown setting"):
        load_config(conf)
