"""The `labgrid` executor: a campaign spread over every board of a kind in a labgrid lab.

coordinator.py speaks to the labgrid coordinator (places, reservations, acquire, release);
pool.py turns the places it lends into boards driven by the ssh executor. labgrid is an
optional dependency (`pip install 'intercore[lab]'`), imported only when a campaign uses it.
"""

from .pool import Board, LabgridPool

__all__ = ["Board", "LabgridPool"]
