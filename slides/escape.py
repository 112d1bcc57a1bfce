"""Text from a results file, made safe for where it lands: a slide (Markdown that Slidev
turns into a Vue template), the deck's YAML headmatter, an SVG figure or the terminal.

A device name, a failure reason or a row label is data, never markup: whatever it holds,
the built page shows it literally, on one line, and no longer than MAX_CHARS."""
from __future__ import annotations

import json
import re

from markupsafe import Markup

from bench.core.schema import one_line

MAX_CHARS = 1000       # a guard: the runner already bounds the reasons it records
# Markdown's inline punctuation (emphasis, code, links, tables, escapes, strikethrough), KaTeX's $
# and the braces of MDC's {attributes}: as character references, which Markdown shows but does not
# interpret. (The deck turns MDC off too; the braces are escaped in case a template turns it on.)
_MARKDOWN = re.compile(r"[|*`\[\]\\~${}]")
_UNDERSCORE_AT_EDGE = re.compile(r"(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")     # inside a word it is literal
_COMPONENT = re.compile(r"(?:(?<=\s)|^):(?=[A-Za-z])")                      # MDC's :component
# What would change the deck's structure at the start of a line: a heading, a quote, a rule, a
# slide separator (---) or a setext underline. "-2.4", "+ a ring of buffers" stay as they are.
_BLOCK_START = re.compile(r"^(?:#|>|[-=*_] ?[-=*_] ?[-=*_])")
# HTML's specials in text and in double-quoted attributes (an apostrophe needs no escape there)
_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}


def _reference(match: re.Match) -> str:
    return f"&#{ord(match.group())};"


def markdown_text(value) -> Markup:
    """``value`` for a slide: HTML-escaped, Markdown's punctuation as character references, and
    braces (which Markdown hands on to Vue as they are) kept from Vue's {{ }} interpolation by v-pre."""
    text = "".join(_HTML.get(c, c) for c in one_line(value, MAX_CHARS))
    braces = "{" in text or "}" in text
    text = _MARKDOWN.sub(_reference, text)
    text = _UNDERSCORE_AT_EDGE.sub(_reference, text)
    text = _COMPONENT.sub(_reference, text)
    if _BLOCK_START.match(text):
        text = f"&#{ord(text[0])};{text[1:]}"
    if braces:
        text = f"<span v-pre>{text}</span>"
    return Markup(text)


def yaml_string(value) -> Markup:
    """``value`` as a double-quoted YAML scalar for the headmatter (JSON is a subset of YAML);
    Slidev renders the title as Markdown too, so it is escaped as slide text first."""
    return Markup(json.dumps(str(markdown_text(value)), ensure_ascii=False))


def yaml_plain(value) -> Markup:
    """``value`` as a double-quoted YAML scalar of plain text, for a headmatter field that Slidev
    puts into an HTML attribute (escaped there) and never renders as Markdown."""
    return Markup(json.dumps(one_line(value, MAX_CHARS), ensure_ascii=False))


_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def plain_text(value, limit: int = MAX_CHARS) -> str:
    """``value`` for an SVG <text> or a terminal: no control characters (XML 1.0 forbids them, a
    terminal obeys them; svgwrite escapes the rest); spaces are kept as they are, since a figure
    or a listing may set two apart on purpose."""
    text = _CONTROLS.sub(" ", str(value))
    return text if len(text) <= limit else text[:limit - 1] + "…"


def finalize(value):
    """Jinja's hook on every [[ ]] output: strings from the context are data, made safe for
    Markdown; markup the templates make themselves (macros, filters that mark it safe) passes."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return markdown_text(value)
    return value
