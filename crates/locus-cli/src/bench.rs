//! `locus bench …`: drivers live in `locus-bench`.

use anyhow::Result;
use clap::Subcommand;

#[derive(Subcommand)]
pub enum BenchCommand {}

pub fn run(b: BenchCommand) -> Result<()> {
    match b {}
}
