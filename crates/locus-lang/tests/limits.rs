//! Chains of indices and fields count against the one nesting limit (100),
//! as every other recursive construct does: a script past it is refused
//! with a positioned error, never a stack overflow or a walk quadratic in
//! its length.

use locus_lang::{compile, Source};

fn scripts(links: usize) -> [(&'static str, String); 4] {
    let struct_type = "type s_t { int v; }\ns_t s;\n";
    [
        (
            "read field chain",
            format!("{struct_type}s.v = 1;\ntrace(s{});\n", ".v".repeat(links)),
        ),
        (
            "read index chain",
            format!("int A[];\nA[0] = 1;\ntrace(A{});\n", "[0]".repeat(links)),
        ),
        (
            "assigned field chain",
            format!("{struct_type}s{} = 1;\n", ".v".repeat(links)),
        ),
        (
            "assigned index chain",
            format!("int A[];\nA{} = 1;\n", "[0]".repeat(links)),
        ),
    ]
}

fn too_deep(text: String) -> Option<(usize, usize)> {
    let src = Source::new("deep.swift", text);
    let errors = compile(&src).err()?;
    let deep = errors.iter().find(|d| d.message == "nesting too deep")?;
    let (_, line, col) = src.index_line_col(deep.span.start);
    Some((line, col))
}

#[test]
fn long_index_and_field_chains_are_refused_as_too_deep() {
    for (what, text) in scripts(100_000) {
        // Placed at the link past the limit, on the chain's line.
        let line = text.lines().position(|l| l.len() > 1000).map(|i| i + 1);
        let at = too_deep(text);
        assert!(
            at.is_some_and(|(l, col)| Some(l) == line && col > 100),
            "{what}: {at:?}"
        );
    }
    // Within the limit the chain is parsed (and judged by its types).
    for (what, text) in scripts(90) {
        assert_eq!(too_deep(text), None, "{what}");
    }
}

/// The fastest of three compiles of `text`.
fn compile_time(text: &str) -> std::time::Duration {
    (0..3)
        .map(|_| {
            let src = Source::new("big.swift", text.to_string());
            let start = std::time::Instant::now();
            compile(&src).expect("compiles");
            start.elapsed()
        })
        .min()
        .expect("three runs")
}

#[test]
fn long_one_line_literals_compile_in_time_linear_in_their_length() {
    // Every entry's position is found on one long line: a walk of the line
    // per entry made a 100,000-entry dictionary take seconds.
    let dict = |n: usize| {
        let pairs: Vec<String> = (0..n).map(|i| format!("\"k{i}\": \"é{i}\"")).collect();
        format!(
            "string d[string] = {{{}}};\ntrace(size(d));\n",
            pairs.join(", ")
        )
    };
    let (small, large) = (compile_time(&dict(25_000)), compile_time(&dict(100_000)));
    // Four times the entries: about four times the time (nine times when
    // it was quadratic); the bound leaves room for a busy machine.
    let ratio = large.as_secs_f64() / small.as_secs_f64();
    assert!(ratio < 6.5, "{small:?} then {large:?}: {ratio:.1}x");
}
