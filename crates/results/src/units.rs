//! Small formatting helpers shared by the renderers and the CLI.

/// Bytes as the user would write them: 1 KiB = 1024 B, 1 MiB = 1048576 B;
/// other values in plain bytes.
pub fn format_size(bytes: u64) -> String {
    const K: u64 = 1024;
    if bytes >= K * K && bytes.is_multiple_of(K * K) {
        format!("{} MiB", bytes / (K * K))
    } else if bytes >= K && bytes.is_multiple_of(K) {
        format!("{} KiB", bytes / K)
    } else {
        format!("{bytes} B")
    }
}

/// Seconds since the Unix epoch as an RFC 3339 UTC time, to the second.
pub fn utc_rfc3339(unix_s: u64) -> String {
    let days = (unix_s / 86_400) as i64;
    let rem = unix_s % 86_400;
    // Civil date from day count (proleptic Gregorian), Howard Hinnant's
    // published algorithm.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(format_size(1), "1 B");
        assert_eq!(format_size(1024), "1 KiB");
        assert_eq!(format_size(1 << 20), "1 MiB");
        assert_eq!(format_size(1500), "1500 B");
        assert_eq!(format_size(8800 * 1024), "8800 KiB");
    }

    #[test]
    fn dates() {
        assert_eq!(utc_rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc_rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc_rfc3339(1_795_000_000), "2026-11-18T11:06:40Z");
    }
}
