"""ShaleDB server package."""
