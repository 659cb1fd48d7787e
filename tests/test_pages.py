"""Compressed pages (tracker/progress_log/pages.py) and the scratch file they go to: what is read back is what was
appended."""

from __future__ import annotations

import os
import threading
import tracemalloc

import pytest

from backend.sessions.scratch_dir import ScratchFile
from tracker.progress_log.pages import MarkLog, MemoryPages, PagedLines


@pytest.mark.parametrize("store", ["memory", "scratch"])
def test_paged_lines_read_back_every_line_in_any_order(tmp_path, store):
    pages = PagedLines(page_size=7, store=MemoryPages() if store == "memory" else ScratchFile(tmp_path))
    lines = [f"line {i} ".encode() * (i % 5 + 1) for i in range(100)]
    for k, line in enumerate(lines):
        pages.append(line)
        assert len(pages) == k + 1 and pages[k] == line and pages[-1] == line
    assert len(pages.pages) == 100 // 7 and pages.stored_bytes > 0
    assert list(pages) == lines
    for k in [99, 0, 50, 13, 14, 98, 7, 6]:
        assert pages[k] == lines[k]
    with pytest.raises(IndexError):
        pages[100]


def test_the_scratch_file_leaves_nothing_in_its_directory(tmp_path):
    scratch = ScratchFile(tmp_path)
    a = scratch.put(b"abc")
    b = scratch.put(b"")
    c = scratch.put(b"x" * 100_000)
    assert (scratch.get(a), scratch.get(b), scratch.get(c)) == (b"abc", b"", b"x" * 100_000)
    assert os.listdir(tmp_path) == []  # anonymous from the start: gone with the process, however it ends
    scratch.close()


def test_readers_in_other_threads_see_whole_lines_while_pages_are_sealed(tmp_path):
    pages = PagedLines(page_size=16, store=ScratchFile(tmp_path))
    stop, bad = threading.Event(), []

    def read() -> None:
        while not stop.is_set():
            n = len(pages)
            for k in range(max(0, n - 40), n):
                if pages[k] != b"%d" % k:
                    bad.append(k)

    readers = [threading.Thread(target=read) for _ in range(2)]
    for t in readers:
        t.start()
    for k in range(5000):
        pages.append(b"%d" % k)
    stop.set()
    for t in readers:
        t.join()
    assert not bad


def test_mark_log_is_a_list_of_marks():
    marks = MarkLog(page_size=4)
    expected = [{"type": "mark", "label": f"job {i}", "at": i / 3, "after": i, "scope": [i]} for i in range(23)]
    for m in expected:
        marks.append(m)
    assert len(marks) == 23 and marks == expected and list(marks) == expected
    assert marks[5] == expected[5] and marks[-1] == expected[-1] and marks[-23] == expected[0]
    assert marks[3:9] == expected[3:9] and marks[20:100] == expected[20:]
    assert marks != expected[:-1] and marks != [*expected[:-1], {"label": "other"}]
    with pytest.raises(IndexError):
        marks[23]
    big = {"type": "mark", "label": "big", "n": 1 << 70}  # beyond orjson's 64 bits: still kept, still read back
    marks.append(big)
    for _ in range(4):
        marks.append({"type": "mark", "label": "after"})
    assert marks[23] == big


def test_kept_lines_cost_their_size():
    """orjson and zstandard hand back bytes in buffers far larger than them (4 kB at least; the size of the input):
    a mark log keeps exactly sized copies, so 20,000 marks cost about their JSON, not 80 MB."""
    marks = MarkLog(page_size=1 << 20)  # every mark in the open page, as dicts and as JSON lines
    tracemalloc.start()
    try:
        for i in range(20_000):
            marks.append({"type": "mark", "label": f"job {i} succeeded", "at": 1.5 + i, "after": i})
        retained, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert retained < 20_000 * 600, retained  # a dict and a ~80-byte line each; orjson's buffers were 4 kB each
    sealed = PagedLines(page_size=256)
    tracemalloc.start()
    try:
        for i in range(256 * 50):
            sealed.append(b"a line that compresses well %d" % (i % 3))
        retained, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert retained < 50 * 1_000, retained  # 50 compressed pages of ~100 bytes, not 50 buffers of 8 kB
