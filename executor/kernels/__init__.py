"""ShaleDB executor/kernels package."""
