"""dossier.html is one self-contained page: nothing in it is fetched from anywhere (no script,
no stylesheet, image, frame or font by URL, no url() or @import in its style, no link off the
page), and its elements are well nested, so it opens offline and archives as one file.

No headless browser is installed on the development host (no chromium, google-chrome or
firefox on PATH), so the page is checked by parsing it, as a browser's parser sees it."""

from __future__ import annotations

from html.parser import HTMLParser

from intercore.assess import html

from test_dossier import _dossier, _system

VOID = {"meta", "br", "hr", "img", "input", "link", "col", "area", "base", "wbr", "source"}
FETCHING = {"script", "link", "img", "iframe", "frame", "object", "embed", "base", "audio",
            "video", "source", "picture", "svg", "form", "input"}


class _Page(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.open: list[str] = []
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str, str | None]] = []
        self.styles: list[str] = []
        self.text: list[str] = []
        self.errors: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += [(tag, k, v) for k, v in attrs]
        if tag not in VOID:
            self.open.append(tag)

    def handle_endtag(self, tag):
        if not self.open or self.open[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.open[-1:] or 'nothing'}")
        else:
            self.open.pop()

    def handle_data(self, data):
        (self.styles if self.open and self.open[-1] == "style" else self.text).append(data)


def test_the_page_fetches_nothing_and_is_well_nested(tmp_path):
    doc = _dossier(tmp_path, _system(tmp_path), 2.0, ("shared", "not-shared"))
    page = _Page()
    page.feed(html.render(doc))
    page.close()
    assert page.errors == [] and page.open == []
    assert page.tags[:4] == ["html", "head", "meta", "title"]
    assert ("meta", "charset", "utf-8") in page.attrs
    assert not set(page.tags) & FETCHING
    for tag, name, value in page.attrs:
        assert not name.startswith("on"), (tag, name)        # no inline script either
        assert name not in ("src", "srcset", "href", "action", "data", "poster"), (tag, name)
        assert name != "style" or "url(" not in (value or ""), (tag, value)
    style = "".join(page.styles)
    assert style and "url(" not in style and "@import" not in style and "@font-face" not in style
    text = " ".join(page.text)
    # What it quotes is text, not markup: the kernel command line's <script> is shown.
    assert "<script>x</script>" in text
    assert doc["headline"] in text and doc["sections"]["capacity"]["refused"] in text
