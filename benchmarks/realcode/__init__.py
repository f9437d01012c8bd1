"""The real-code accuracy benchmark: hand labels of Function classes from real projects and their scorer."""
