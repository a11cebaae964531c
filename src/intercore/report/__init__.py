"""Self-contained HTML reports: one file, plots inline, nothing fetched from the network.

`html.render(title, sections)` turns a list of `Section`s (tables, figures, text, warnings)
into the page; `plots` draws matplotlib figures as inline images. Any stage adds its own
sections (campaign results, platform-model channel tables, the protection experiment).
"""
