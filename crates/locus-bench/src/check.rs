//! `locus bench check`: front-end speed on a generated script of N lines,
//! beside lexing alone (the least any checker must do) in the same run.

use crate::report::{header, median, row_precise, target};
use std::fmt::Write;
use std::time::{Duration, Instant};

/// A script of about `lines` lines using most of the language: functions,
/// apps, loops, conditionals, arrays, structs, string formatting.
pub fn generate(lines: usize) -> String {
    let mut s = String::from("import io;\nimport string;\ntype rec { string name; int n; }\n");
    let mut i = 0;
    while s.lines().count() < lines {
        let _ = write!(
            s,
            "(int o{i}) f{i}(int a, int b) {{\n  int t = a * {i} + b;\n  if (t > 10) {{ o{i} = t %/ 2; }} else {{ o{i} = t + 1; }}\n}}\n\
             app (file out) g{i}(file inp, int k) {{\n  \"tool{i}\" \"-k\" k @inp @stdout=out;\n}}\n\
             main_{i}_arr = [1, 2, 3];\n\
             foreach v{i}, j{i} in main_{i}_arr {{\n  rec r{i};\n  r{i}.name = sprintf(\"item-%i\", v{i});\n  r{i}.n = f{i}(v{i}, j{i});\n  printf(\"%s %i\", r{i}.name, r{i}.n);\n}}\n\
             file in{i}<\"in{i}.txt\">;\nfile res{i}<sprintf(\"out-%i.txt\", {i})> = g{i}(in{i}, {i});\n"
        );
        i += 1;
    }
    s
}

pub fn run(lines: usize, rounds: usize) -> anyhow::Result<()> {
    let text = generate(lines);
    let n = text.lines().count();
    println!("{}", crate::machine::describe());
    println!(
        "check: a generated script of {n} lines, {} bytes; {rounds} rounds, median",
        text.len()
    );
    let src = locus_lang::Source::new("generated.swift", text.clone());
    let mut check = Vec::new();
    let mut lex = Vec::new();
    for _ in 0..rounds.max(1) {
        let t = Instant::now();
        if let Err(d) = locus_lang::compile(&src) {
            anyhow::bail!("the generated script does not check: {}", d[0].render(&src));
        }
        check.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        let (tokens, _) = locus_lang::lex(&text);
        std::hint::black_box(tokens);
        lex.push(t.elapsed().as_secs_f64());
    }
    let (c, l) = (median(check), median(lex));
    header("s", "lex only");
    row_precise(&format!("check {n} lines"), c, l);
    target(
        &format!("check of a 10,000-line script under 1 s ({c:.3} s)"),
        Duration::from_secs_f64(c) < Duration::from_secs(1),
    );
    Ok(())
}
