"""The freezer monitor and its fail-safe: ic-monitor (monitor.py), the independent watchdog
(watchdog.py), what a runner publishes (notify_block.py), the plan-to-monitor step (guard.py),
the systemd service (service.py, sdnotify.py) and the fault drills (drill.py)."""
