"""ShaleDB executor package."""
