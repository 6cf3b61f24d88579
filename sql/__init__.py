"""ShaleDB sql package."""
