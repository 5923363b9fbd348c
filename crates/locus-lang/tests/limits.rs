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

/// The fastest of three compiles of each text, compiled in turn so that a
/// busy spell of the machine (other tests run beside this one) falls on
/// both alike.
fn compile_times(texts: [&str; 2]) -> [std::time::Duration; 2] {
    let mut best = [std::time::Duration::MAX; 2];
    for _ in 0..3 {
        for (text, best) in texts.iter().zip(&mut best) {
            let src = Source::new("big.swift", text.to_string());
            let start = std::time::Instant::now();
            compile(&src).expect("compiles");
            *best = (*best).min(start.elapsed());
        }
    }
    best
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
    let [small, large] = compile_times([&dict(8_000), &dict(128_000)]);
    // Sixteen times the entries: about sixteen times the time (256 times
    // were it quadratic); the bound, the geometric mean of the two, leaves
    // room for a noisy machine.
    let ratio = large.as_secs_f64() / small.as_secs_f64();
    assert!(ratio < 64.0, "{small:?} then {large:?}: {ratio:.1}x");
}
