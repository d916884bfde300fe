//! CPU time of a process, for figures per CPU-second: user plus system time from `/proc/<pid>/stat` (fields 14
//! and 15, `utime` and `stime`, in clock ticks of `USER_HZ`). Linux only; elsewhere the figure is absent.

use anyhow::Context;

/// Clock ticks per second of `/proc`'s times: the kernel's `USER_HZ`, 100 on every architecture Linux reports
/// `/proc/<pid>/stat` in (what `getconf CLK_TCK` prints).
const USER_HZ: f64 = 100.0;

/// User plus system CPU seconds process `pid` has used so far (its threads included).
pub fn process_cpu_s(pid: u32) -> anyhow::Result<f64> {
    let path = format!("/proc/{pid}/stat");
    let stat = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
    parse_stat_cpu_s(&stat).with_context(|| format!("{path} does not hold utime and stime"))
}

/// User plus system CPU seconds of this process so far.
pub fn own_cpu_s() -> anyhow::Result<f64> {
    process_cpu_s(std::process::id())
}

/// `utime + stime` of one `/proc/<pid>/stat` line, in seconds. The command name (field 2) is in parentheses and
/// may hold spaces or parentheses itself: fields are counted after its last `)`.
fn parse_stat_cpu_s(stat: &str) -> Option<f64> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    // After the name come field 3 (state) onwards: utime is field 14, stime field 15.
    let mut fields = after_name.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some((utime + stime) as f64 / USER_HZ)
}

/// `count` per CPU-second, rounded to a whole number (None without CPU time to divide by).
pub fn per_cpu_s(count: u64, cpu_s: f64) -> Option<f64> {
    (cpu_s > 0.0).then(|| (count as f64 / cpu_s).round())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utime_and_stime_are_read_after_a_name_with_spaces_and_parentheses() {
        let stat = "4242 (ferry d (x)) S 1 4242 4242 0 -1 4194560 1500 0 0 0 250 130 0 0 20 0 9 0 100 0 0";
        assert_eq!(parse_stat_cpu_s(stat), Some(3.8));
        assert_eq!(parse_stat_cpu_s("4242 (short) S 1"), None);
    }

    #[test]
    fn this_process_has_used_some_cpu_and_figures_per_cpu_second_divide_by_it() {
        let busy: u64 = (0..2_000_000u64).map(std::hint::black_box).sum();
        assert!(busy > 0);
        assert!(own_cpu_s().unwrap() >= 0.0);
        assert_eq!(per_cpu_s(500, 2.0), Some(250.0));
        assert_eq!(per_cpu_s(500, 0.0), None);
    }
}
