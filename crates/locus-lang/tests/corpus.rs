//! The Swift conformance corpus: `tests/swift/check/ok/*.swift` must be
//! accepted; every `tests/swift/check/err/*.swift` must be rejected with
//! exactly the errors its `// EXPECT-ERROR: LINE: text` headers list.
//! Every example under `examples/` must be accepted too.

use locus_lang::{compile, Source};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn scripts(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "swift"))
        .collect();
    files.sort();
    files
}

fn load(path: &Path) -> Source {
    Source::new(
        path.display().to_string(),
        std::fs::read_to_string(path).unwrap(),
    )
}

#[test]
fn accepted_scripts_and_examples_check() {
    let mut files = scripts(&root().join("tests/swift/check/ok"));
    let n_ok = files.len();
    files.extend(scripts(&root().join("examples")));
    let mut failures = Vec::new();
    for f in &files {
        let src = load(f);
        if let Err(diags) = compile(&src) {
            failures.push(
                diags
                    .iter()
                    .map(|d| d.render(&src))
                    .collect::<Vec<_>>()
                    .join("\n"),
            );
        }
    }
    assert!(
        failures.is_empty(),
        "{} rejected:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(n_ok >= 75, "only {n_ok} accepted scripts");
}

fn expectations(text: &str) -> Vec<(usize, String)> {
    text.lines()
        .filter_map(|l| l.strip_prefix("// EXPECT-ERROR: "))
        .map(|rest| {
            let (line, msg) = rest.split_once(": ").expect("EXPECT-ERROR: LINE: text");
            (line.trim().parse().expect("a line number"), msg.to_string())
        })
        .collect()
}

#[test]
fn rejected_scripts_give_exactly_the_expected_errors() {
    let files = scripts(&root().join("tests/swift/check/err"));
    assert!(files.len() >= 75, "only {} rejected scripts", files.len());
    let mut problems = Vec::new();
    for f in &files {
        let src = load(f);
        let expected = expectations(&src.text);
        assert!(
            !expected.is_empty(),
            "{}: no EXPECT-ERROR header",
            f.display()
        );
        let diags = match compile(&src) {
            Ok(_) => {
                problems.push(format!("{}: accepted, but should fail", f.display()));
                continue;
            }
            Err(d) => d,
        };
        let got: Vec<(usize, String)> = diags
            .iter()
            .map(|d| (src.line_col(d.span.start).0, d.message.clone()))
            .collect();
        for (line, msg) in &expected {
            if !got
                .iter()
                .any(|(l, m)| l == line && m.contains(msg.as_str()))
            {
                problems.push(format!(
                    "{}: missing error at line {line}: {msg}\n  got: {got:?}",
                    f.display()
                ));
            }
        }
        for (line, msg) in &got {
            if !expected
                .iter()
                .any(|(l, m)| l == line && msg.contains(m.as_str()))
            {
                problems.push(format!(
                    "{}: unexpected error at line {line}: {msg}",
                    f.display()
                ));
            }
        }
        // Every rendering names file:line:col and carets the source.
        for d in &diags {
            let r = d.render(&src);
            assert!(
                r.starts_with(&format!("{}:", src.name)) && r.contains(" | ") && r.contains('^'),
                "{r}"
            );
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
