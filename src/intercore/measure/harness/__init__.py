"""The paired, interleaved harness: a victim beside each aggressor set, round by round.

Takes a victim and aggressor specs (measure.aggressors), makes paired samples and their slowdowns
(n, median, max, CI) and saves them as one record. Start with session.py (one `measure` run),
then paired.py (the rounds), comparison.py (where samples become Δ) and stats.py."""
