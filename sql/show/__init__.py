"""SHOW statements rendered as Doris 2.1 prints them, and the information_schema tables."""
