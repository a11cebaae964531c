"""Aggressors: what the native tools can run, the named attacks, their control block, the
named sets in the store, and the worst-aggressor search. Start with presets.py."""
