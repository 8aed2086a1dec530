"""The Markdown artifact's eight methods: front matter, headings, sections, links, text, AST."""

from __future__ import annotations

import pytest

from orchestration.artifacts import SpooledMarkdownArtifact
from orchestration.errors import ArtifactMethodError

DOC = """---
title: Release notes
date: 2026-01-02
tags: [a, b]
---
# Intro

See [docs](https://example.org/docs "Docs") and ![logo](logo.png).

## Details

More *text* here.

```python
print("hi")
```

# Risks

None known.
"""


def md() -> SpooledMarkdownArtifact:
    return SpooledMarkdownArtifact.from_text(DOC)


def test_front_matter_is_a_mapping_with_iso_dates() -> None:
    """YAML front matter becomes an encodable mapping (dates as ISO strings)."""
    assert md().md_frontmatter() == {
        "title": "Release notes",
        "date": "2026-01-02",
        "tags": ["a", "b"],
    }
    assert SpooledMarkdownArtifact.from_text("# x\n").md_frontmatter() == {}


def test_headings_carry_file_line_numbers_and_filter_by_depth() -> None:
    """Line numbers count from the top of the file, front matter included."""
    assert md().md_headings() == [
        {"depth": 1, "text": "Intro", "line": 6},
        {"depth": 2, "text": "Details", "line": 10},
        {"depth": 1, "text": "Risks", "line": 18},
    ]
    assert [h["text"] for h in md().md_headings(1)] == ["Intro", "Risks"]


def test_sections_run_to_the_next_heading_of_the_same_level() -> None:
    """A depth-1 section's body includes its subsections; the last runs to the end."""
    sections = md().md_sections(1)
    assert [s["heading"] for s in sections] == ["Intro", "Risks"]
    assert "## Details" in sections[0]["body"] and sections[1]["body"] == "None known."


def test_links_images_and_code_blocks() -> None:
    """Links and images keep their text, target, title and line; code blocks their language."""
    assert md().md_links() == [
        {"text": "docs", "href": "https://example.org/docs", "title": "Docs", "line": 8}
    ]
    assert md().md_images() == [{"alt": "logo", "src": "logo.png", "title": "", "line": 8}]
    assert md().md_code_blocks("python") == [
        {"lang": "python", "code": 'print("hi")\n', "line": 14}
    ]
    assert md().md_code_blocks("rust") == []
    assert md().md_links(start_line=9) == []


def test_text_and_ast_respect_line_ranges() -> None:
    """md_text and md_ast keep the blocks starting inside the inclusive range."""
    assert md().md_text(start_line=10, end_line=12) == "Details\nMore text here."
    ast = md().md_ast(start_line=18, end_line=18)
    assert [t["type"] for t in ast] == ["heading_open", "inline"]
    assert ast[0]["tag"] == "h1" and ast[0]["endLine"] == 18


def test_front_matter_that_is_not_a_mapping_is_refused() -> None:
    """A YAML list as front matter is a named error, not a silent empty mapping."""
    with pytest.raises(ArtifactMethodError, match="not a mapping"):
        SpooledMarkdownArtifact.from_text("---\n- a\n---\n# x\n").md_frontmatter()
