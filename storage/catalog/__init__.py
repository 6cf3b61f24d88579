"""ShaleDB storage/catalog package."""
