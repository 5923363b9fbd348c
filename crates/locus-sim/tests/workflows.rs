//! The run simulation's fixed budget of seeds in CI, and proof that it
//! finds a silent wait when one is put in on purpose.

use locus_sim::{simulate_workflow, Expected, WorkflowConfig, WorkflowFailureKind, WorkflowInject};

/// Seeds CI runs each time (`make simulate-runs SEEDS=N` runs more); set
/// `LOCUS_SIM_SEED` to replay one.
const SEEDS: u64 = 40;

/// The ranks' and daemons' logs on stderr when `RUST_LOG` asks for them.
fn logs() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .try_init();
}

#[test]
fn every_seeded_workflow_ends_as_its_faults_say_it_must() {
    logs();
    let seeds: Vec<u64> = match std::env::var("LOCUS_SIM_SEED") {
        Ok(s) => vec![s.parse().expect("LOCUS_SIM_SEED is a number")],
        Err(_) => (0..SEEDS).collect(),
    };
    let mut ends = Vec::new();
    let mut lost_and_done = 0;
    for seed in seeds {
        match simulate_workflow(seed, &WorkflowConfig::default()) {
            Ok(s) => {
                ends.push(s.ended);
                lost_and_done += usize::from(s.node_lost && s.ended == Expected::Done);
            }
            Err(f) => panic!("{f}"),
        }
    }
    eprintln!("{ends:?}; {lost_and_done} done after losing a file-system node");
    if ends.len() > 1 {
        // Runs on Locus lose nodes and still end with every output right.
        assert!(lost_and_done > 0, "{ends:?}");
        // The budget draws every way a run can end.
        for end in [
            Expected::Done,
            Expected::TaskFailed,
            Expected::Stalled,
            Expected::ServerLost,
        ] {
            assert!(ends.contains(&end), "no seed ended {end:?}: {ends:?}");
        }
    }
}

#[test]
fn a_task_whose_end_is_never_told_is_caught_as_a_silent_wait_with_its_seed() {
    let cfg = WorkflowConfig {
        deadline: std::time::Duration::from_secs(5),
        inject: Some(WorkflowInject::TaskNeverEnds),
    };
    let found = (0..10).find_map(|seed| simulate_workflow(seed, &cfg).err());
    let f = found.expect("some seed catches a task that never ends");
    assert!(matches!(f.kind, WorkflowFailureKind::NeverEnded(_)), "{f}");
    assert!(f.to_string().contains(&format!("SEED={}", f.seed)), "{f}");
}
