"""What every layer shares: findings, fixes as text edits, and the conventions settings name."""
