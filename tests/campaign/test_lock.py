"""One campaign process per store, however the store is named."""

from __future__ import annotations

import pytest

from intercore.campaign.runner import exclusive
from intercore.errors import InputError


def test_a_symlink_to_the_store_finds_the_same_lock(tmp_path):
    store = tmp_path / "lab.db"
    (tmp_path / "elsewhere").mkdir()
    link = tmp_path / "elsewhere" / "link.db"
    link.symlink_to(store)
    with exclusive(store):
        with pytest.raises(InputError, match="another campaign process"):
            with exclusive(link):
                pass
        with pytest.raises(InputError, match="another campaign process"):
            with exclusive(tmp_path / "elsewhere" / ".." / "lab.db"):
                pass
    with exclusive(link):  # released with its holder
        pass
