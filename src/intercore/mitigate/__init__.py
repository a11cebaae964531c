"""Mitigate stage: the interference matrix, Algorithm 1 (cgroup plan), the cgroup boundary."""
