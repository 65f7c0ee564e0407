//! The wall clock, for what people read: when a run started, when a log
//! line was written. Never used to time anything (that is the monotonic
//! clock, `monotonic_ns`).

use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds and milliseconds since the Unix epoch (0 if the clock is set
/// before it).
pub fn unix_now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Nanoseconds since the Unix epoch (0 if the clock is set before it):
/// for wire formats that carry the wall time (iperf 2's datagram stamps,
/// from which its server computes latency and jitter).
pub fn wall_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// Seconds since the Unix epoch (0 if the clock is set before it).
pub fn unix_now() -> u64 {
    unix_now_ms() / 1000
}

/// Seconds since the Unix epoch as an RFC 3339 UTC time, to the second.
pub fn utc_rfc3339(unix_s: u64) -> String {
    let (y, m, d) = civil(unix_s / 86_400);
    let rem = unix_s % 86_400;
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Milliseconds since the Unix epoch as an RFC 3339 UTC time with
/// milliseconds (log lines).
pub fn utc_rfc3339_ms(unix_ms: u64) -> String {
    let s = utc_rfc3339(unix_ms / 1000);
    format!("{}.{:03}Z", &s[..s.len() - 1], unix_ms % 1000)
}

/// Year, month and day of a day count since 1970-01-01 (proleptic
/// Gregorian calendar; Howard Hinnant's published algorithm).
fn civil(days: u64) -> (i64, i64, i64) {
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(utc_rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc_rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc_rfc3339(1_795_000_000), "2026-11-18T11:06:40Z");
        assert_eq!(utc_rfc3339_ms(1_795_000_000_042), "2026-11-18T11:06:40.042Z");
    }
}
