"""Paper 000 §4.4.3 on this host: Solo, Interference and Protected, with its scenario
summaries and figures. Start with protection.py."""
