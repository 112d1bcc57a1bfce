"""Talks cut to time from the outline's plans: the main path within its limits on both committed
decks and the fixture, every other slide kept as backup and reachable from the main path, the
study whole under --talk full."""
import contextlib
import io
import re

import pytest

import build
from slides import talk
from slides.outline import TALK_LIMITS, TALKS
from tests.conftest import ROOT
from tests.test_build import headings, prose_words

RESULTS = sorted((ROOT / "results").glob("*.yaml"))
GPU_FILES = [p for p in RESULTS if not build.NODE_FILE.search(p.name)]
LINK = re.compile(r'<div class="backup-link"><Link to="(\d+)">([^<]*)</Link></div>')


def built(results, out, *args) -> tuple[str, str]:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert build.main(["--results", str(results), "--out-dir", str(out), *args]) == 0
    return (out / "slides.md").read_text(), printed.getvalue()


@pytest.fixture(scope="module")
def decks(tmp_path_factory):
    """Each committed GPU's deck as the whole study and as each talk."""
    out = {}
    for path in GPU_FILES:
        for name in (*TALKS, build.FULL):
            folder = tmp_path_factory.mktemp(f"{path.stem}-{name}")
            out[path.stem, name] = built(path, folder, "--talk", name)
    return out


@pytest.fixture(scope="module")
def fixture_talks(tmp_path_factory):
    """The test fixture's deck as each talk."""
    return {name: built(ROOT / "tests" / "fixtures" / "h100.yaml", tmp_path_factory.mktemp(f"fixture-{name}"), "--talk", name)[0]
            for name in TALKS}


def test_the_slides_split_as_slidev_splits_them_and_join_back(decks):
    for (gpu, name), (md, _) in decks.items():
        slides = talk.split(md)
        assert talk.join(slides) == md
        assert [s.title for s in slides] == headings(md), (gpu, name)      # one title a slide


def test_a_rule_inside_a_code_fence_is_no_slide_break():
    md = "---\ntheme: default\n---\n\n# One\n\n````md magic-move\n```cpp\n---\n```\n````\n\n---\nclass: x\n---\n\n# Two\n"
    slides = talk.split(md)
    assert [s.title for s in slides] == ["One", "Two"] and slides[1].frontmatter == "class: x\n"
    assert talk.join(slides) == md


@pytest.mark.parametrize("name", TALKS)
def test_each_talk_fits_its_slot_on_every_committed_gpu(decks, name):
    for path in GPU_FILES:
        md, printed = decks[path.stem, name]
        slides = talk.split(md)
        cut = talk.cut(decks[path.stem, build.FULL][0], TALKS[name])
        main = slides[:len(cut.main)]
        assert len(main) <= TALK_LIMITS[name] and cut.minutes <= TALK_LIMITS[name], (path.name, len(main), cut.minutes)
        assert slides[len(main)].title == talk.BACKUP_DIVIDER            # the backup follows the main path
        assert f"talk {name}: {len(main)} main slides, then {len(slides) - len(main)} backup; about " \
               f"{cut.minutes:.0f} min" in printed


FIGURE = re.compile(r'<img src="\./svgs/')


@pytest.mark.parametrize("name", TALKS)
def test_every_main_slide_has_a_picture_few_words_and_notes_that_fit_the_pane(decks, fixture_talks, name):
    """On the main path a room looks at a picture and reads at most MAIN_PROSE_WORDS; the speaker's
    part of the notes is at most SPOKEN_WORDS (the rest follows "For questions.")."""
    for deck, md in (*((path.stem, decks[path.stem, name][0]) for path in GPU_FILES), ("fixture", fixture_talks[name])):
        slides = talk.split(md)
        main = slides[:[s.title for s in slides].index(talk.BACKUP_DIVIDER)]
        bare = [s.title for s in main if not FIGURE.search(s.body)]
        wordy = {s.title: n for s in main if (n := prose_words(s.body.lstrip("\n"))) > talk.MAIN_PROSE_WORDS}
        long_notes = {s.title: n for s in main if (n := talk.spoken_words(s)) > talk.SPOKEN_WORDS}
        assert not bare and not wordy and not long_notes, (deck, bare, wordy, long_notes)


@pytest.mark.parametrize("name", TALKS)
def test_a_talk_keeps_every_slide_of_the_study_and_its_main_path_in_the_studys_order(decks, name):
    for path in GPU_FILES:
        full = headings(decks[path.stem, build.FULL][0])
        cut = headings(decks[path.stem, name][0])
        assert sorted(cut) == sorted(full)
        main = cut[:cut.index(talk.BACKUP_DIVIDER)]
        assert main == [t for t in full if t in main] and all(talk.matches(t, TALKS[name]) for t in main[1:])
        # the backup keeps the study's order too
        backup = cut[cut.index(talk.BACKUP_DIVIDER) + 1:]
        assert backup == [t for t in full if t in backup]


@pytest.mark.parametrize("name", TALKS)
def test_every_backup_slide_before_the_divider_is_a_click_from_the_main_path_and_back(decks, name):
    for path in GPU_FILES:
        slides = talk.split(decks[path.stem, name][0])
        full = [s.title for s in talk.split(decks[path.stem, build.FULL][0])]
        main_count = [s.title for s in slides].index(talk.BACKUP_DIVIDER)
        reached = set()
        for n, slide in enumerate(slides[:main_count], 1):
            for to, text in LINK.findall(slide.body):
                count = int(re.search(r"(\d+) slide", text).group(1))
                run = list(range(int(to), int(to) + count))
                assert all(i > main_count + 1 for i in run)            # backup slides, past the divider
                back = LINK.findall(slides[run[-1] - 1].body)
                assert (str(n), f"← back to slide {n}") in back
                reached.update(slides[i - 1].title for i in run)
        before_divider = full[:full.index(talk.BACKUP_DIVIDER)]
        assert reached == {t for t in before_divider if t not in [s.title for s in slides[:main_count]]}


@pytest.mark.parametrize("name", TALKS)
def test_every_pattern_of_a_plan_names_a_slide_of_some_committed_deck(decks, name):
    """A plan names slides that exist: a title changed in a template shows here, not as a slide gone
    quietly from the talk."""
    titles = {t for (gpu, talk_name), (md, _) in decks.items() if talk_name == build.FULL for t in headings(md)}
    for pattern in TALKS[name]:
        assert any(talk.matches(t, (pattern,)) for t in titles), pattern


def test_full_is_the_study_in_the_outlines_order_without_links(decks):
    for path in GPU_FILES:
        md, printed = decks[path.stem, build.FULL]
        assert "backup-link" not in md and "talk " not in printed.splitlines()[1]
