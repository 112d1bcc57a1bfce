"""Talks cut to time. The deck renders every slide of the study in the outline's order; a talk puts
the slides its plan names (slides/outline.py TALKS) on the main path and every other slide after it
as backup. Each main slide links to the backup slides of its topic, or to those that followed it in
the study's order, and the last of those links back; a speaker who is asked clicks through and returns.

Slides are split as Slidev splits them: at a ``---`` line outside code fences, a frontmatter block
directly after the separator (no blank line) up to the next ``---``."""
from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field

WORDS_PER_MINUTE = 150          # a speaker's pace through the notes
SECONDS_PER_SLIDE = 20          # looking, pointing, changing slides
# A main slide is for a room: a picture, at most this many words of prose to read beside it, and
# notes whose spoken part fits the presenter pane without scrolling; the rest waits for questions
MAIN_PROSE_WORDS = 60
SPOKEN_WORDS = 60
BACKUP_DIVIDER = "Backup Slides"        # the backup section's divider (slides/backup.md.j2) leads the backup
FENCE = re.compile(r"^(`{3,}|~{3,})")
NOTES = re.compile(r"\n<!--(?:(?!<!--).)*-->\s*$", re.S)       # the slide's last comment: its notes


def fence_after(line: str, fenced: str | None) -> str | None:
    """The code fence open after ``line`` (its opening run of backticks or tildes), given the one open
    before it: a fence closes on a line of at least as many of its character and nothing else."""
    if fenced:
        stripped = line.strip()
        return None if stripped and set(stripped) == {fenced[0]} and len(stripped) >= len(fenced) else fenced
    m = FENCE.match(line)
    return m.group(1) if m else None


@dataclass
class Slide:
    frontmatter: str | None          # the lines between the separators, each ending in a newline
    body: str
    links: list[str] = field(default_factory=list)      # HTML a talk adds before the notes

    @property
    def title(self) -> str:
        fenced = None
        for line in self.body.splitlines():
            if not fenced and line.startswith("# "):
                return line[2:].strip()
            fenced = fence_after(line, fenced)
        return ""

    @property
    def notes(self) -> str:
        m = NOTES.search(self.body)
        return m.group(0).strip()[4:-3] if m else ""

    def text(self) -> str:
        body = self.body
        if self.links:
            m = NOTES.search(body)
            at = m.start() if m else len(body.rstrip("\n"))
            body = body[:at] + "\n\n" + "\n".join(self.links) + body[at:]
        return "---\n" + (self.frontmatter + "---\n" if self.frontmatter is not None else "") + body


def split(markdown: str) -> list[Slide]:
    """The slides of ``markdown`` (which opens with the headmatter's separator); ``join`` gives it back."""
    if not markdown.startswith("---\n"):
        raise ValueError("a deck opens with its headmatter's ---")
    slides, lines = [], markdown[4:].split("\n")
    frontmatter, body, fenced, in_frontmatter = None, [], None, bool(lines[0].strip())
    if in_frontmatter:
        frontmatter = ""
    for line in lines:
        if in_frontmatter:
            if line == "---":
                in_frontmatter = False
            else:
                frontmatter += line + "\n"
            continue
        if not fenced and line == "---":
            slides.append(Slide(frontmatter, "\n".join(body) + "\n"))
            frontmatter, body, in_frontmatter = None, [], None
            continue
        fenced = fence_after(line, fenced)
        if in_frontmatter is None:          # the line after a separator: frontmatter if it is not blank
            in_frontmatter = bool(line.strip())
            if in_frontmatter:
                frontmatter = line + "\n"
                continue
        body.append(line)
    slides.append(Slide(frontmatter, "\n".join(body)))
    if not slides[-1].body.endswith("\n"):
        raise ValueError("a deck ends with a newline")
    return slides


def join(slides: list[Slide]) -> str:
    return "".join(s.text() for s in slides)


def matches(title: str, plan) -> bool:
    return any(fnmatch.fnmatchcase(title, pattern) for pattern in plan)


@dataclass
class Talk:
    markdown: str
    main: list[str]                  # the main path's titles, in order
    backup: int                      # slides after it
    minutes: float                   # rehearsal estimate: the main path's notes spoken, and its slides shown


FOR_QUESTIONS = "For questions."      # the notes past it are for answers, not said


def spoken_words(slide: Slide) -> int:
    """The words of the notes a speaker says: up to "For questions.", without markup."""
    return len(re.sub(r"<[^>]+>", " ", slide.notes.split(FOR_QUESTIONS)[0]).split())


def rehearsal_minutes(slides: list[Slide]) -> float:
    """The main path's notes read at WORDS_PER_MINUTE, and SECONDS_PER_SLIDE for each slide."""
    return sum(spoken_words(s) for s in slides) / WORDS_PER_MINUTE + len(slides) * SECONDS_PER_SLIDE / 60


def cut(markdown: str, plan) -> Talk:
    """``markdown`` (the whole study) as the talk of ``plan`` (title patterns): its slides in order,
    then the backup divider and every other slide in the study's order, each main slide's backup
    slides linked from it (and back)."""
    slides = split(markdown)
    main = [i for i, s in enumerate(slides) if i == 0 or matches(s.title, plan)]
    divider = next((i for i, s in enumerate(slides) if s.title == BACKUP_DIVIDER), len(slides))
    # a slide before the divider hangs on the main slide of its topic (the title before " — ": a
    # kernel's code on its performance slide), else on the main slide shown before it
    topic = {m: slides[m].title.split(" — ")[0] for m in main[1:]}
    owner = {i: next((m for m in topic if topic[m] == slides[i].title.split(" — ")[0]), max(m for m in main if m < i))
             for i in range(1, divider) if i not in main}
    backup = [i for i in range(len(slides)) if i not in main and i != divider]
    order = main + ([divider] if divider < len(slides) else []) + backup
    number = {i: n for n, i in enumerate(order, 1)}
    for m in main:
        run = [i for i in backup if owner.get(i) == m]
        if run:
            slides[m].links.append(f'<div class="backup-link"><Link to="{number[run[0]]}">Backup: '
                                   f'{len(run)} slide{"s" if len(run) > 1 else ""} →</Link></div>')
            slides[run[-1]].links.append(f'<div class="backup-link"><Link to="{number[m]}">← back to '
                                         f'slide {number[m]}</Link></div>')
    shown = [slides[i] for i in main]
    return Talk(join([slides[i] for i in order]), [s.title for s in shown], len(order) - len(main),
                rehearsal_minutes(shown))
