"""The results store: raw samples of every invocation in one SQLite file (see db.py), and each
stage's own tables in a module of their own (jobs, validation, campaigns, bandwidth,
named_sets). The only code that talks SQL.

A stage that stores more than samples adds: its migration (schema.py); a module here with
its row records, the attachment that writes them in their invocation's transaction, and a
reader class that Store exposes as an attribute (jobs.py is the smallest example). The stage
converts its own types to those records; the store imports no stage's code, only the record
modules base/sample.py and base/job.py (tests/test_layers.py)."""

from .db import DEFAULT_PATH, Recording, Store
from .records import (
    InvocationListing,
    InvocationRecord,
    StoredHost,
    StoredInvocation,
    StoredWorkload,
    WorkloadRecord,
)

__all__ = [
    "DEFAULT_PATH", "Recording", "Store", "InvocationListing",
    "InvocationRecord", "StoredHost", "StoredInvocation", "StoredWorkload", "WorkloadRecord",
]
