"""The results store: raw samples of every invocation in one SQLite file (see db.py)."""

from .db import DEFAULT_PATH, Store
from .records import (
    InvocationListing,
    InvocationRecord,
    StoredHost,
    StoredInvocation,
    StoredWorkload,
    WorkloadRecord,
)

__all__ = [
    "DEFAULT_PATH", "Store", "InvocationListing",
    "InvocationRecord", "StoredHost", "StoredInvocation", "StoredWorkload", "WorkloadRecord",
]
