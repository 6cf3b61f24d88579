#!/usr/bin/env bash
# Set up everything the tests need and run the whole suite:
# system packages (mariadb client, the MariaDB C library mysqlclient builds against, Connector/J,
# sqlline and a JDK for the JDBC and Spark tests), a .venv
# with ShaleDB and its test extras, then ruff and mypy (on the packages pyproject.toml's
# [tool.mypy] files lists), then pytest. Extra arguments go to pytest (test paths given there
# replace the whole suite).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

need_apt=()
command -v curl >/dev/null 2>&1 || need_apt+=(curl)  # tests/clients/test_http_auth.py
command -v mariadb >/dev/null 2>&1 || need_apt+=(mariadb-client)
command -v pkg-config >/dev/null 2>&1 || need_apt+=(pkg-config)
pkg-config --exists libmariadb 2>/dev/null || pkg-config --exists mysqlclient 2>/dev/null \
  || need_apt+=(libmariadb-dev)
# JDBC tests: MariaDB Connector/J, the sqlline shell, and a JDK (javac compiles the test driver).
[ -f /usr/share/java/mariadb-java-client.jar ] || need_apt+=(libmariadb-java)
command -v sqlline >/dev/null 2>&1 || need_apt+=(sqlline)
command -v javac >/dev/null 2>&1 || need_apt+=(default-jdk-headless)
if [ ${#need_apt[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "installing system packages: ${need_apt[*]}"
  $SUDO apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${need_apt[@]}" >/dev/null
fi

if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -e ".[test]" >/dev/null
# Static checks first (seconds, before minutes of tests): ruff and mypy over the packages that
# [tool.mypy] files in pyproject.toml lists. That is the one list: a package joins both checks
# by being added there. Either failing fails the run.
mapfile -t CHECKED < <(.venv/bin/python -c 'import tomllib
print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["tool"]["mypy"]["files"]))')
[ ${#CHECKED[@]} -gt 0 ] || { echo "pyproject.toml: [tool.mypy] files lists no package" >&2; exit 1; }
.venv/bin/python -m ruff check "${CHECKED[@]}"
.venv/bin/python -m mypy "${CHECKED[@]}"
# pyproject.toml's testpaths is tests/: no arguments run the whole suite, paths run just those.
exec .venv/bin/python -m pytest -q "$@"
