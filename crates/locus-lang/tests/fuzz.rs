//! Property test: whatever text it is given, the front end returns a
//! program or diagnostics, never panics or hangs. Inputs are the corpus and
//! examples mutated at random (deletions, duplications, splices, byte flips,
//! token insertions) plus token soup, from a fixed seed, within a time budget.

use locus_lang::{compile, Source};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::path::Path;
use std::time::{Duration, Instant};

const BUDGET: Duration = Duration::from_secs(8);
const PIECES: &[&str] = &[
    "(",
    ")",
    "{",
    "}",
    "[",
    "]",
    "<",
    ">",
    ";",
    ",",
    ":",
    "=",
    "=>",
    "@",
    "@location=",
    "\"",
    "\"\"\"",
    "/*",
    "*/",
    "//",
    "#",
    "app",
    "main",
    "foreach",
    "in",
    "if",
    "else",
    "switch",
    "case",
    "default",
    "for",
    "wait",
    "deep",
    "import",
    "type",
    "typedef",
    "global const",
    "int",
    "file",
    "string",
    "location",
    "bag<int>",
    "updateable_float",
    "<incr>",
    ":=",
    "+=",
    "x",
    "f",
    "0x",
    "1e",
    "..",
    "%",
    "%/",
    "%%",
    "**",
    "!",
    "-",
    "\\",
    "\n",
    "\u{e9}",
    "\0",
    "99999999999999999999",
];

fn corpus() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut out = Vec::new();
    for dir in [
        "tests/swift/check/ok",
        "tests/swift/check/err",
        "tests/swift/run",
        "examples",
    ] {
        for e in std::fs::read_dir(root.join(dir)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "swift") {
                out.push(std::fs::read_to_string(p).unwrap());
            }
        }
    }
    out
}

fn cut(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn mutate(rng: &mut StdRng, text: &str, others: &[String]) -> String {
    let mut s = text.to_string();
    for _ in 0..rng.gen_range(1..6) {
        let len = s.len().max(1);
        let a = cut(&s, rng.gen_range(0..len));
        let b = cut(&s, a + rng.gen_range(0..40));
        match rng.gen_range(0..5) {
            0 => s.replace_range(a..b, ""),
            1 => {
                let dup = s[a..b].to_string();
                s.insert_str(a, &dup);
            }
            2 => s.insert_str(a, PIECES[rng.gen_range(0..PIECES.len())]),
            3 => {
                let o = &others[rng.gen_range(0..others.len())];
                let c = cut(o, rng.gen_range(0..o.len().max(1)));
                let d = cut(o, c + rng.gen_range(0..80));
                s.insert_str(a, &o[c..d]);
            }
            _ => {
                let mut bytes = s.into_bytes();
                if !bytes.is_empty() {
                    let i = rng.gen_range(0..bytes.len());
                    bytes[i] = rng.gen();
                }
                s = String::from_utf8_lossy(&bytes).into_owned();
            }
        }
    }
    s
}

#[test]
fn front_end_never_panics() {
    let corpus = corpus();
    let mut rng = StdRng::seed_from_u64(0x10c05);
    let start = Instant::now();
    let mut runs = 0;
    while start.elapsed() < BUDGET {
        let text = if runs % 10 == 9 {
            (0..rng.gen_range(1..200))
                .map(|_| PIECES[rng.gen_range(0..PIECES.len())])
                .collect::<Vec<_>>()
                .join(" ")
        } else {
            let base = rng.gen_range(0..corpus.len());
            mutate(&mut rng, &corpus[base], &corpus)
        };
        let src = Source::new("fuzz.swift", text);
        if let Err(diags) = compile(&src) {
            assert!(!diags.is_empty());
            for d in &diags {
                d.render(&src);
            }
        }
        runs += 1;
    }
    // Deep nesting is refused, not a stack overflow.
    let deep = format!("int a = {}1{};", "(".repeat(5000), ")".repeat(5000));
    assert!(compile(&Source::new("deep.swift", deep)).is_err());
    let deep_blocks = format!("main {}{}", "{ ".repeat(5000), "}".repeat(5001));
    assert!(compile(&Source::new("deep.swift", deep_blocks)).is_err());
    assert!(runs > 100, "only {runs} inputs in the budget");
}
