"""Output files are written whole or not at all, and what is at the path is
never replaced by something else: a device, a FIFO or a symbolic link
keeps being what it was (`api.write_atomic`)."""

import os
import stat
import threading

import pytest

from bgsim.api import OutputError, write_atomic


def test_a_regular_file_is_replaced_whole_and_leaves_no_temporary(tmp_path):
    p = tmp_path / "r.json"
    p.write_text("old")
    os.chmod(p, 0o640)
    write_atomic(str(p), "new")
    assert p.read_text() == "new"
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o640
    assert os.listdir(tmp_path) == ["r.json"]
    write_atomic(str(tmp_path / "b.png"), b"\x89PNG")
    assert (tmp_path / "b.png").read_bytes() == b"\x89PNG"


def test_a_symlink_stays_a_link_and_its_target_gets_the_text(tmp_path):
    target = tmp_path / "target.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    write_atomic(str(link), "new")
    assert link.is_symlink() and target.read_text() == "new"
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "made.json")
    write_atomic(str(dangling), "made")
    assert dangling.is_symlink() and (tmp_path / "made.json").read_text() == "made"


def test_a_character_device_is_written_to_not_replaced():
    if not os.access("/dev/null", os.W_OK):
        pytest.skip("/dev/null is not writable here")
    before = os.stat("/dev/null")
    write_atomic("/dev/null", "x" * 10000)
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_ino == before.st_ino


def test_a_fifo_stays_a_fifo_and_its_reader_gets_the_text(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo).read()))
    reader.start()
    write_atomic(str(fifo), "through the pipe")
    reader.join(10)
    assert got == ["through the pipe"] and stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_a_failed_write_names_the_file_and_leaves_nothing_behind(tmp_path):
    with pytest.raises(OutputError, match="it is a directory"):
        write_atomic(str(tmp_path), "x")
    if os.access("/dev/full", os.W_OK):
        with pytest.raises(OutputError, match="cannot write /dev/full: No space left on device"):
            write_atomic("/dev/full", "x" * 100000)
    with pytest.raises(OutputError, match=f"cannot write {tmp_path}/missing/r.json"):
        write_atomic(str(tmp_path / "missing" / "r.json"), "x")
    assert os.listdir(tmp_path) == []


def test_map_refuses_a_directory_before_computing_and_writes_through_a_link(cli, tmp_path):
    p = cli("map", "--shape", "4x4x2", "--grid", "8x4", "-o", str(tmp_path))
    assert p.returncode == 2 and "-o" in p.stderr and "is a directory" in p.stderr
    assert "hop-bytes" not in p.stdout and os.listdir(tmp_path) == []
    target = tmp_path / "grid.map"
    target.write_text("")
    (tmp_path / "link.map").symlink_to(target)
    cli("map", "--shape", "4x4x2", "--grid", "8x4", "-o", str(tmp_path / "link.map"), check=True)
    assert (tmp_path / "link.map").is_symlink()
    lines = target.read_text().splitlines()
    assert lines[0].startswith("#") and len(lines) == 33
