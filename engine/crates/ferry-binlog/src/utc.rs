//! Microseconds since the Unix epoch as an RFC 3339 UTC timestamp, without a date library.

/// `1700000000000001` → `2023-11-14T22:13:20.000001Z`.
pub fn format_us(us: u64) -> String {
    let secs = us / 1_000_000;
    let (days, day_secs) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_from_days(days);
    let (h, m, s) = (day_secs / 3600, day_secs % 3600 / 60, day_secs % 60);
    format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}.{:06}Z", us % 1_000_000)
}

/// Proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_instants() {
        assert_eq!(format_us(0), "1970-01-01T00:00:00.000000Z");
        assert_eq!(format_us(1_700_000_000_000_001), "2023-11-14T22:13:20.000001Z");
        assert_eq!(format_us(951_782_400_000_000), "2000-02-29T00:00:00.000000Z");
        assert_eq!(format_us(4_107_542_399_999_999), "2100-02-28T23:59:59.999999Z");
    }

    #[test]
    fn the_largest_value_does_not_overflow() {
        assert!(format_us(u64::MAX).ends_with(".551615Z"));
    }
}
