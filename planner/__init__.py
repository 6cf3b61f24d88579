"""ShaleDB planner package."""
