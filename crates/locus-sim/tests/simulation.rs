//! The simulation's fixed budget of seeds in CI, and proof that it finds
//! a broken promise when one is put in on purpose.

use locus_sim::{simulate, Config, FailureKind, Inject};

/// Seeds CI runs each time (`make simulate SEEDS=N` runs more); set
/// `LOCUS_SIM_SEED` to replay one.
const SEEDS: u64 = 12;

/// The daemons' and clients' logs on stderr when `RUST_LOG` asks for them.
fn logs() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .try_init();
}

#[test]
fn every_answer_of_a_budget_of_seeded_workloads_with_crashes_is_explained() {
    logs();
    let seeds: Vec<u64> = match std::env::var("LOCUS_SIM_SEED") {
        Ok(s) => vec![s.parse().expect("LOCUS_SIM_SEED is a number")],
        Err(_) => (0..SEEDS).collect(),
    };
    let (mut ops, mut crashes) = (0, 0);
    for seed in seeds {
        match simulate(seed, &Config::default()) {
            Ok(s) => {
                ops += s.ops;
                crashes += s.crashes;
            }
            Err(f) => panic!("{f}"),
        }
    }
    assert!(ops > 0);
    eprintln!("{ops} operations, {crashes} crashes: every answer explained");
    // The workloads do crash daemons, mid-step too.
    assert!(crashes > 0);
}

#[test]
fn a_rename_that_is_not_one_step_is_caught_with_its_seed() {
    let cfg = Config {
        steps: 40,
        inject: Some(Inject::RenameByCopy),
        ..Config::default()
    };
    let found = (0..40).find_map(|seed| simulate(seed, &cfg).err());
    let f = found.expect("some seed catches renames done by copy");
    assert_eq!(f.kind, FailureKind::NoOrder, "{f}");
    assert!(f.to_string().contains(&format!("SEED={}", f.seed)));
}
