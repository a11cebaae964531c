"""Measure stage: aggressors and victims, the paired harness, statistics, the canary."""
