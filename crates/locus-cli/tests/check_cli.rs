//! `locus check` as users run it.

mod common;

use common::locus;

fn repo(path: &str) -> String {
    format!("{}/../../{path}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn good_script_checks_and_emits_ir() {
    let out = locus(&["check", &repo("examples/filecopy-locality.swift")]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout.is_empty());
    let out = locus(&[
        "check",
        "--emit",
        "ir",
        &repo("examples/filecopy-locality.swift"),
    ]);
    let ir = String::from_utf8(out.stdout).unwrap();
    assert!(
        ir.contains("app write_file() -> (file_output%0: file)"),
        "{ir}"
    );
    assert!(ir.contains("call write_file() @location=L1"), "{ir}");
    assert!(ir.contains("set_rank("), "{ir}");
}

#[test]
fn bad_script_reports_every_error_with_position_and_caret() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.swift");
    std::fs::write(
        &path,
        "int a = \"x\";\nint b = nope;\n@location=1 trace(b);\n",
    )
    .unwrap();
    let out = locus(&["check", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    let p = path.display();
    assert!(
        err.contains(&format!(
            "{p}:1:9: error: expected int, found string\n 1 | int a = \"x\";\n   |         ^^^"
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!("{p}:2:9: error: undeclared variable 'nope'")),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "{p}:3:1: error: @location applies to app and leaf functions"
        )),
        "{err}"
    );
    assert!(err.trim_end().ends_with("4 errors"), "{err}");
}

#[test]
fn unreadable_script_is_one_line() {
    for command in ["check", "run"] {
        let out = locus(&[command, "/nonexistent/wf.swift"]);
        assert!(!out.status.success());
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{command}: {err}");
        assert!(
            err.starts_with("locus: cannot read /nonexistent/wf.swift"),
            "{command}: {err}"
        );
    }
}

#[test]
fn modules_come_from_include_dirs_and_swift_path_and_cycles_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let (main, lib) = (dir.path().join("main"), dir.path().join("lib"));
    std::fs::create_dir_all(main.join("pkg")).unwrap();
    std::fs::create_dir_all(&lib).unwrap();
    let script = main.join("wf.swift");
    std::fs::write(
        &script,
        "import pkg.one;\nimport shared;\nmain { trace(one() + two()); }\n",
    )
    .unwrap();
    std::fs::write(main.join("pkg/one.swift"), "(int o) one() { o = 1; }\n").unwrap();
    std::fs::write(lib.join("shared.swift"), "(int o) two() { o = 2; }\n").unwrap();
    let script = script.to_str().unwrap();
    let missing = locus(&["check", script]);
    let err = String::from_utf8_lossy(&missing.stderr);
    assert!(!missing.status.success());
    assert!(
        err.contains("wf.swift:2:1: error: unknown module 'shared': no shared.swift in"),
        "{err}"
    );
    let lib_s = lib.to_str().unwrap();
    assert!(locus(&["check", "-I", lib_s, script]).status.success());
    let via_env = std::process::Command::new(env!("CARGO_BIN_EXE_locus"))
        .args(["check", script])
        .env("SWIFT_PATH", lib_s)
        .output()
        .unwrap();
    assert!(via_env.status.success());
    // A cycle loads each module once, as Swift/T does: what both define
    // is there.
    std::fs::write(
        lib.join("shared.swift"),
        "import back;\n(int o) two() { o = back() + 1; }\n",
    )
    .unwrap();
    std::fs::write(
        lib.join("back.swift"),
        "import shared;\n(int o) back() { o = 1; }\n",
    )
    .unwrap();
    let cycle = locus(&["check", "-I", lib_s, script]);
    assert!(
        cycle.status.success(),
        "{}",
        String::from_utf8_lossy(&cycle.stderr)
    );
}

#[test]
fn output_cut_short_by_its_reader_ends_quietly() {
    // `locus check --emit ir … | head -1`: the reader closes the pipe first.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_locus"))
        .args(["check", "--emit", "ir", &repo("examples/docking.swift")])
        .stdout(writer)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(141), "as if killed by SIGPIPE");
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_dataflow_graph_is_dot_and_graphviz_draws_it() {
    let script = repo("examples/filecopy-locality.swift");
    let out = locus(&["check", "--graph", "dot", &script]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dot = String::from_utf8(out.stdout).unwrap();
    assert!(dot.starts_with("digraph "), "{dot}");
    // The apps, their placement drawn as an input, the loop as a cluster.
    assert!(dot.contains("label=\"foreach i\";"), "{dot}");
    for app in ["write_file", "read_file"] {
        assert!(
            dot.contains(&format!("label=\"{app}\" shape=box style=\"filled\"")),
            "{dot}"
        );
    }
    let out = locus(&["check", "--graph", "svg", &script]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let svg = String::from_utf8(out.stdout).unwrap();
    assert!(
        svg.contains("<svg") && svg.contains(">write_file</text>"),
        "{svg}"
    );
    assert!(svg.contains(">foreach i</text>"), "{svg}");
}
