"""Scripts checked and run from Python: diagnostics with positions, a run
whose records are read while it runs and after, failures as exceptions."""

import time

import pytest

import locus

WORKFLOW = """\
import sys;
app (file o) square(int i) { "sh" "-c" "sleep 0.3; echo $(( $1 * $1 )) > $0" o i; }
int n = toint(argv("n"));
foreach i in [0:n-1] {
  file f <sprintf("/locus/squares/%i.txt", i)> = square(i);
}
"""


def test_check_gives_each_error_with_its_position(tmp_path):
    good = tmp_path / "good.swift"
    good.write_text('trace("fine");\n')
    assert locus.check(good) == []
    bad = tmp_path / "bad.swift"
    bad.write_text('int x = 1;\nstring s = x;\n')
    [d] = locus.check(bad)
    assert (d.file, d.line, d.col) == (str(bad), 2, 12)
    assert "expected string" in d.message
    assert str(d).startswith(f"{bad}:2:12: error: ")
    # An error in an imported module names the module's file.
    (tmp_path / "m.swift").write_text("(int o) f() { o = \"no\"; }\n")
    uses = tmp_path / "uses.swift"
    uses.write_text("import m;\ntrace(f());\n")
    [d] = locus.check(uses)
    assert d.file.endswith("m.swift") and (d.line, d.col) == (1, 19)
    with pytest.raises(FileNotFoundError):
        locus.check(tmp_path / "absent.swift")


def test_a_run_started_from_python_is_read_while_it_runs(cluster, fs, tmp_path):
    script = tmp_path / "squares.swift"
    script.write_text(WORKFLOW)
    run = locus.run(script, args={"n": 12}, workers=2, fs=cluster, mount=False, wait=False,
                    run_dir=tmp_path / "run")
    assert run.run_dir == tmp_path / "run"
    seen = set()
    while run.status == "running":
        seen.add(len(run.records()))
        time.sleep(0.05)
    assert run.wait() is run and run.status == "succeeded" and run.returncode == 0
    # Part of the tasks was read before the rest had run.
    assert any(0 < k < 12 for k in seen), seen
    records = run.records()
    assert len(records) == 12
    assert set(records["function"]) == {"square"}
    assert set(records["at"]) == {f"{script}:5:50"}
    assert (records["exit"] == 0).all() and (records["attempts"] == 1).all()
    assert (records["bytes_written"] > 0).all()
    assert (records["end"] >= records["start"]).all()
    assert records["seconds"].min() >= 0.3
    assert fs.cat("/squares/11.txt") == b"121\n"
    assert "12 tasks" in run.report()
    page = run.html(tmp_path / "report.html")
    assert page.read_text().startswith("<!DOCTYPE html>")


def test_a_failing_run_raises_with_the_scripts_position(tmp_path):
    script = tmp_path / "fails.swift"
    script.write_text('app (file o) boom() { "false"; }\nfile f <"/locus/x"> = boom();\n')
    with pytest.raises(locus.RunFailed) as e:
        locus.run(script, workers=1, mount=False, run_dir=tmp_path / "run")
    failed = e.value
    assert (failed.file, failed.line, failed.col) == (str(script), 2, 23)
    assert "app 'boom' failed" in failed.message and "exited with code 1" in failed.message
    assert failed.kind == "Task" and failed.returncode != 0
    assert failed.run_dir.is_dir()


def test_a_script_that_does_not_compile_is_not_run(tmp_path):
    script = tmp_path / "bad.swift"
    script.write_text("trace(undefined);\n")
    with pytest.raises(locus.ScriptError) as e:
        locus.run(script, workers=1, run_dir=tmp_path / "run")
    [d] = e.value.diagnostics
    assert (d.line, d.col) == (1, 7)


def test_a_cancelled_run_stops(tmp_path):
    script = tmp_path / "long.swift"
    script.write_text('app (file o) nap() { "sleep" "60"; }\nfile f <"/locus/n"> = nap();\n')
    run = locus.run(script, workers=1, mount=False, wait=False, run_dir=tmp_path / "run")
    time.sleep(1)
    assert run.status == "running"
    started = time.monotonic()
    run.cancel()
    with pytest.raises(locus.RunFailed):
        run.wait(timeout=30)
    assert time.monotonic() - started < 30
    assert run.status == "failed"


def test_a_run_resumed_from_python_keeps_what_was_done(tmp_path):
    script = tmp_path / "four.swift"
    script.write_text('app (file o) w(int i) { "sh" "-c" "echo $1 > $0" o i; }\n'
                      'foreach i in [0:3] { file f <sprintf("/locus/r/%i", i)> = w(i); }\n')
    run_dir = tmp_path / "run"
    first = locus.run(script, workers=1, mount=False, run_dir=run_dir)
    assert len(first.records()) == 4
    # A directory holding a run is refused without resume or fresh.
    with pytest.raises(locus.RunFailed) as e:
        locus.run(script, workers=1, mount=False, run_dir=run_dir)
    assert e.value.kind == "Launch" and "--resume" in e.value.message
    again = locus.run(script, workers=1, mount=False, run_dir=run_dir, resume=True)
    assert "4 done by an earlier run" in again.report()
    fresh = locus.run(script, workers=1, mount=False, run_dir=run_dir, fresh=True)
    assert "0 done by an earlier run" in fresh.report()
