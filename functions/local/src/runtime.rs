//! The async runtime the local server runs on: how many worker threads serve connections.
//!
//! The store does its own work on threads of its own (SQLite's writer and readers, the scan
//! threads; ADR 027), and under load the kernel's network stack needs a core too. A worker per
//! core made the workers wake each other and the store's threads for every request: on two
//! cores, one worker served 16-client GetTask at 68–80k/s against 50–60k/s with two, and
//! SendMessage no slower (ADR 030). So the default leaves one core to the store.

use std::io;

/// Cores left to the store's own threads and the network stack when the worker count is not
/// given.
pub const RESERVED_CORES: usize = 1;

/// The most worker threads `--workers` accepts.
pub const MAX_WORKERS: usize = 1024;

/// Worker threads for a machine with `cores` cores: all but `RESERVED_CORES`, at least one.
pub fn default_workers(cores: usize) -> usize {
    cores.saturating_sub(RESERVED_CORES).max(1)
}

/// Worker threads for this machine (`default_workers` of its available parallelism).
pub fn workers_here() -> usize {
    default_workers(std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Parses `--workers`: a whole number from 1 to `MAX_WORKERS`.
pub fn parse_workers(s: &str) -> Result<usize, String> {
    let n: usize = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a whole number of worker threads"))?;
    if n == 0 || n > MAX_WORKERS {
        return Err(format!(
            "worker threads must be 1 to {MAX_WORKERS}, not {n}"
        ));
    }
    Ok(n)
}

/// A multi-threaded runtime with `workers` worker threads (the blocking pool as tokio's default).
pub fn build(workers: usize) -> io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_leaves_one_core_to_the_store_and_keeps_at_least_one_worker() {
        assert_eq!(default_workers(0), 1);
        assert_eq!(default_workers(1), 1);
        assert_eq!(default_workers(2), 1);
        assert_eq!(default_workers(3), 2);
        assert_eq!(default_workers(16), 15);
        assert!(workers_here() >= 1);
    }

    #[test]
    fn workers_are_parsed_from_one_to_the_limit() {
        assert_eq!(parse_workers("1"), Ok(1));
        assert_eq!(parse_workers(" 4 "), Ok(4));
        assert_eq!(parse_workers(&MAX_WORKERS.to_string()), Ok(MAX_WORKERS));
        let past = parse_workers(&(MAX_WORKERS + 1).to_string()).unwrap_err();
        assert!(past.contains("1 to 1024"), "{past}");
        assert!(parse_workers("0").unwrap_err().contains("not 0"));
        assert!(parse_workers("two")
            .unwrap_err()
            .contains("not a whole number"));
        assert!(parse_workers("-1").is_err());
    }

    #[test]
    fn a_runtime_is_built_with_the_workers_asked_for() {
        let rt = build(2).expect("runtime");
        assert_eq!(rt.metrics().num_workers(), 2);
        assert_eq!(rt.block_on(async { 40 + 2 }), 42);
    }
}
