"""ShaleDB planner/rules package."""
