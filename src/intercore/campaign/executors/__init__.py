"""Where a campaign's runs execute: this host (`local`) or a board reached over ssh."""
