"""What a refinement rule is: a named, switchable edit of footprints and of the interference
relation, tied to the configuration setting that triggers it and to the document it rests on."""

from __future__ import annotations

from typing import ClassVar

from ..draft import Draft
from ..platform import Platform


class Rule:
    id: ClassVar[str]         # the name models and the CLI use (rules: [...], --disable ID)
    code: ClassVar[str]       # R1 ... R8, as numbered in the research notes
    title: ClassVar[str]
    reference: ClassVar[str]  # the document the rule rests on
    setting: ClassVar[str]    # what in a model makes it apply

    def apply(self, platform: Platform, draft: Draft) -> None:
        """Edit the draft's footprints and relation. Splitting rules may do nothing here."""

    def to_dict(self) -> dict:
        return {"id": self.id, "code": self.code, "title": self.title,
                "reference": self.reference, "setting": self.setting}


class SplitRule(Rule):
    """A rule that refines one component into finer service owners (see draft.Split)."""

    def owners_for(self, platform: Platform, data: tuple[str, ...], component: str
                   ) -> list[str] | None:
        """The owners of `component`'s services that an access touching `data` uses, or
        None when this rule does not split the component."""
        raise NotImplementedError

    def all_owners(self, platform: Platform, component: str) -> list[str] | None:
        raise NotImplementedError
