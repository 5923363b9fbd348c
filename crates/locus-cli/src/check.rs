//! `locus check`: the front end alone.

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use locus_lang::{compile, Source};
use std::path::PathBuf;

#[derive(Clone, Copy, ValueEnum)]
pub enum Emit {
    /// The intermediate form the runtime executes, readably.
    Ir,
}

#[derive(Args)]
pub struct CheckArgs {
    /// Swift scripts to check.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Print a lowered form of each script that checks.
    #[arg(long)]
    pub emit: Option<Emit>,
}

pub fn run(a: CheckArgs) -> Result<()> {
    let mut failed = 0;
    for path in &a.files {
        let text =
            std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        let src = Source::new(path.display().to_string(), String::from_utf8_lossy(&text));
        match compile(&src) {
            Ok(program) => {
                if let Some(Emit::Ir) = a.emit {
                    println!("{program}");
                }
            }
            Err(diags) => {
                failed += 1;
                eprintln!("{}", locus_lang::diag::report(&diags, &src));
            }
        }
    }
    if failed > 0 {
        // The diagnostics above say what; exit non-zero without more text.
        std::process::exit(1);
    }
    if a.files.is_empty() {
        bail!("no script given");
    }
    Ok(())
}
