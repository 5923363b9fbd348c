//! Printing figures next to their baselines.

/// Prints a header for a table of `label | locus | baseline | ratio` rows.
pub(crate) fn header(unit: &str, baseline: &str) {
    println!(
        "{:<34} {:>14} {:>14} {:>8}",
        "",
        format!("locus {unit}"),
        format!("{baseline} {unit}"),
        "ratio"
    );
}

pub(crate) fn row(label: &str, locus: f64, baseline: f64) {
    row_with(label, locus, baseline, 0);
}

pub(crate) fn row_precise(label: &str, locus: f64, baseline: f64) {
    row_with(label, locus, baseline, 3);
}

fn row_with(label: &str, locus: f64, baseline: f64, digits: usize) {
    let ratio = if baseline > 0.0 {
        locus / baseline
    } else {
        f64::NAN
    };
    println!("{label:<34} {locus:>14.digits$} {baseline:>14.digits$} {ratio:>8.2}");
}

/// Prints whether a target was met.
pub(crate) fn target(what: &str, met: bool) {
    println!("target {}: {what}", if met { "met" } else { "MISSED" });
}

/// The median of a non-empty list.
pub(crate) fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
