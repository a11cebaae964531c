"""Mitigate stage: the interference matrix, Algorithm 1 (cgroup plan), the cgroup boundary,
and the freezer monitor that protects critical tasks at run time (monitor.py)."""
