"""Insight computed from what was read: costs, stats, signals, changes, episodes and recall by
meaning, and the memory people and agents write."""
