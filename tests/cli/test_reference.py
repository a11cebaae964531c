"""docs/cli-reference.md is what the command tree says now (issue 19 item 11): a command, an
option or an example changed without regenerating the page fails here, with the command that
regenerates it."""

from pathlib import Path

from intercore.cli.main import command
from intercore.cli.reference import markdown

PAGE = Path(__file__).resolve().parents[2] / "docs" / "cli-reference.md"


def test_the_reference_page_is_generated_from_the_current_tree():
    assert PAGE.read_text() == markdown(command()), \
        "regenerate: python -m intercore.cli.reference > docs/cli-reference.md"


def test_every_visible_command_has_a_section_and_no_alias_does():
    text = PAGE.read_text()
    for heading in ("## intercore measure run", "## intercore mitigate plan",
                    "## intercore compile build", "## intercore learn train",
                    "## intercore dossier verify", "## intercore model analyze"):
        assert heading + "\n" in text
    # the flat names of earlier releases are hidden aliases, not part of the reference
    assert "## intercore cgroups" not in text and "## intercore monitor\n" not in text
