"""Mitigate stage: Algorithm 1 (a cgroup plan from the interference matrix), the cgroup
boundary, and the freezer monitor that protects critical tasks at run time (monitor.py)."""
