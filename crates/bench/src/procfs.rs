//! CPU time and memory of processes, from /proc (Linux).

use std::path::Path;

/// Clock ticks per second for /proc's utime and stime. Linux has used 100 on every mainstream
/// architecture for decades; reading it without libc would need `getconf`.
const CLK_TCK: u64 = 100;

/// A process and its descendants (nginx's workers), found through /proc/<pid>/task/*/children.
pub fn tree(pid: u32) -> Vec<u32> {
    let mut out = vec![pid];
    let mut i = 0;
    while i < out.len() {
        let p = out[i];
        if let Ok(tasks) = std::fs::read_dir(format!("/proc/{p}/task")) {
            for t in tasks.flatten() {
                if let Ok(c) = std::fs::read_to_string(t.path().join("children")) {
                    out.extend(c.split_whitespace().filter_map(|s| s.parse::<u32>().ok()));
                }
            }
        }
        i += 1;
    }
    out
}

/// User + system CPU time of the processes, in microseconds (0 for any that vanished).
pub fn cpu_us(pids: &[u32]) -> u64 {
    pids.iter()
        .filter_map(|p| std::fs::read_to_string(format!("/proc/{p}/stat")).ok())
        .filter_map(|s| stat_ticks(&s))
        .sum::<u64>()
        * (1_000_000 / CLK_TCK)
}

/// utime + stime from a /proc/<pid>/stat line (fields 14 and 15; the command name may hold spaces).
fn stat_ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

/// Resident set size of the processes, summed, in KiB.
pub fn rss_kib(pids: &[u32]) -> u64 {
    pids.iter()
        .filter_map(|p| status_field(format!("/proc/{p}/status"), "VmRSS:"))
        .sum()
}

fn status_field(path: impl AsRef<Path>, field: &str) -> Option<u64> {
    let s = std::fs::read_to_string(path).ok()?;
    let line = s.lines().find(|l| l.starts_with(field))?;
    line[field.len()..].split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_after_a_name_with_spaces() {
        let s = "42 (a b) c) S 1 2 3 4 5 6 7 8 9 10 111 222 0 0";
        assert_eq!(stat_ticks(s), Some(333));
    }

    #[test]
    fn own_process_has_cpu_and_memory() {
        let me = std::process::id();
        // Burn a little CPU so the tick count cannot be zero.
        let mut x = 0u64;
        let t = std::time::Instant::now();
        while t.elapsed() < std::time::Duration::from_millis(30) {
            x = x.wrapping_mul(31).wrapping_add(7);
        }
        assert!(x != 1);
        assert!(cpu_us(&[me]) > 0);
        assert!(rss_kib(&[me]) > 100);
        assert!(tree(me).contains(&me));
        assert_eq!(cpu_us(&[u32::MAX]), 0);
    }
}
