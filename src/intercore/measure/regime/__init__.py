"""The host's cache-sharing regime: is cross-core interference observable right now?

The canary (canary.py), core sharing between the two CPUs (core.py) and the victim as its own
witness (witness.py); every "shared" label and worst-regime figure reads them."""
