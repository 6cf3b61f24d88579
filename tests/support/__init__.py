"""Test support code shared by the live-server suites (server process control)."""
