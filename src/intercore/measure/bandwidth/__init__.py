"""Memory bandwidth: which traffic sources this host offers (sources.py: perf events, the
PMU-free latency probe), the periodic profiler of paper 004 (profile.py), its figure and its
store adapter. Start with sources.py."""
