"""ShaleDB storage package."""
