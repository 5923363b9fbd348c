//! What the figures were measured on.

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// One line: CPU model and count, memory, kernel, load average.
pub fn describe() -> String {
    let cpuinfo = read("/proc/cpuinfo");
    let model = cpuinfo
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .and_then(|r| r.split(':').nth(1))
        })
        .unwrap_or("unknown cpu")
        .trim()
        .to_string();
    let cores = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
    let mem_gib = read("/proc/meminfo")
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|r| r.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / (1024.0 * 1024.0));
    let load: Vec<String> = read("/proc/loadavg")
        .split_whitespace()
        .take(3)
        .map(str::to_string)
        .collect();
    format!(
        "machine: {cores} cores ({model}), {mem_gib:.0} GiB, Linux {}, load {}",
        read("/proc/sys/kernel/osrelease").trim(),
        load.join(" ")
    )
}
