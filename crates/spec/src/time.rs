//! Lengths of time as every flag and plan key takes them, one parser for
//! all: a bare number in the setting's own unit, as each always took
//! (`--time 30` seconds, `--timeout-ms 300` milliseconds, `--slow-us 100`
//! microseconds), or a duration with its units, read by the `humantime`
//! crate (`90s`, `2m`, `1h30m`, `500ms`, `250us`). [`Secs`], [`Millis`],
//! [`Micros`] and [`FracMillis`] are the settings' types: each parses from a flag
//! (`FromStr`) and from a plan (a number or a string), and prints as the
//! bare number it holds, so help texts and stored settings read as
//! before. Calendar times (`history --since`) are [`since`]'s, with the
//! `jiff` crate.

use serde::{Deserialize, Deserializer};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// A length of time that does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("'{text}' is not a length of time: give a number of {unit} or a duration with units, such as 90s, 2m, 1h30m or 500ms")]
pub struct TimeError {
    /// The text as given.
    pub text: String,
    /// What a bare number means for this setting ("seconds").
    pub unit: &'static str,
}

/// `text` in units of `unit_ns` nanoseconds (named `unit`): a bare
/// non-negative number, or a humantime duration.
fn parse(text: &str, unit_ns: f64, unit: &'static str) -> Result<f64, TimeError> {
    let t = text.trim();
    let bad = || TimeError {
        text: text.to_string(),
        unit,
    };
    if let Ok(v) = t.parse::<f64>() {
        return (v.is_finite() && v >= 0.0).then_some(v).ok_or_else(bad);
    }
    let d = humantime::parse_duration(t).map_err(|_| bad())?;
    Ok(d.as_nanos() as f64 / unit_ns)
}

/// Deserializes a number or a string through `from`.
fn number_or_text<'de, D: Deserializer<'de>, T: FromStr<Err = TimeError>>(
    d: D,
    from: impl FnOnce(f64) -> Result<T, TimeError>,
) -> Result<T, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Number(f64),
        Text(String),
    }
    match Raw::deserialize(d)? {
        Raw::Number(v) => from(v),
        Raw::Text(s) => s.parse(),
    }
    .map_err(serde::de::Error::custom)
}

/// Seconds (a bare number is seconds; fractions allowed).
#[derive(Clone, Copy, Debug, Default, PartialEq, PartialOrd)]
pub struct Secs(pub f64);

/// Milliseconds, whole (a bare number is milliseconds).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Millis(pub u64);

/// Microseconds, whole (a bare number is microseconds).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Micros(pub u64);

/// Milliseconds with a fraction (rrul's probe interval: 0.5 ms is one).
#[derive(Clone, Copy, Debug, Default, PartialEq, PartialOrd)]
pub struct FracMillis(pub f64);

impl FromStr for Secs {
    type Err = TimeError;
    fn from_str(s: &str) -> Result<Secs, TimeError> {
        parse(s, 1e9, "seconds").map(Secs)
    }
}

impl FromStr for Millis {
    type Err = TimeError;
    fn from_str(s: &str) -> Result<Millis, TimeError> {
        whole(parse(s, 1e6, "milliseconds")?, s, "milliseconds").map(Millis)
    }
}

impl FromStr for Micros {
    type Err = TimeError;
    fn from_str(s: &str) -> Result<Micros, TimeError> {
        whole(parse(s, 1e3, "microseconds")?, s, "microseconds").map(Micros)
    }
}

/// `v` as a whole number of its unit (a duration finer than the unit is
/// rounded to the nearest; beyond u64 is an error).
fn whole(v: f64, text: &str, unit: &'static str) -> Result<u64, TimeError> {
    let r = v.round();
    (r <= u64::MAX as f64).then_some(r as u64).ok_or(TimeError {
        text: text.to_string(),
        unit,
    })
}

impl FromStr for FracMillis {
    type Err = TimeError;
    fn from_str(s: &str) -> Result<FracMillis, TimeError> {
        parse(s, 1e6, "milliseconds").map(FracMillis)
    }
}

impl fmt::Display for FracMillis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl<'de> Deserialize<'de> for FracMillis {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<FracMillis, D::Error> {
        number_or_text(d, |v| v.to_string().parse())
    }
}

impl fmt::Display for Secs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl fmt::Display for Millis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl fmt::Display for Micros {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl<'de> Deserialize<'de> for Secs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Secs, D::Error> {
        number_or_text(d, |v| v.to_string().parse())
    }
}

impl<'de> Deserialize<'de> for Millis {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Millis, D::Error> {
        number_or_text(d, |v| v.to_string().parse())
    }
}

impl<'de> Deserialize<'de> for Micros {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Micros, D::Error> {
        number_or_text(d, |v| v.to_string().parse())
    }
}

impl Secs {
    /// As a `Duration` (negative or not finite: zero).
    pub fn duration(self) -> Duration {
        Duration::try_from_secs_f64(self.0).unwrap_or_default()
    }
}

/// A point in time or an age as `history --since` takes it: a UTC date
/// (`2026-11-27`), a time (`2026-11-27T09:00:00Z`, any RFC 3339 offset),
/// or an age before now (`12h`, `7d`, `4w`, `1h30m`); the UTC RFC 3339
/// time it means, as the store's times are written (so they compare as
/// text). `now_unix` is now, in seconds since the epoch.
pub fn since(s: &str, now_unix: u64) -> Result<String, SinceError> {
    let t = s.trim();
    let bad = || SinceError(s.to_string());
    if let Ok(d) = humantime::parse_duration(t) {
        let back = d.as_secs().min(now_unix);
        return Ok(stackmeter_sys::utc_rfc3339(now_unix - back));
    }
    // A date alone (YYYY-MM-DD) is its midnight UTC; anything longer is
    // a time and must be one whole (jiff reads a date out of a time too).
    let ts: jiff::Timestamp = match t.len() {
        10 => t
            .parse::<jiff::civil::Date>()
            .and_then(|d| d.to_zoned(jiff::tz::TimeZone::UTC))
            .map_err(|_| bad())?
            .timestamp(),
        _ => t.parse().map_err(|_| bad())?,
    };
    let unix = u64::try_from(ts.as_second()).map_err(|_| bad())?;
    Ok(stackmeter_sys::utc_rfc3339(unix))
}

/// A `--since` that is neither a date, a time nor an age.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("--since '{0}': expected a UTC date like 2026-11-27, a time like 2026-11-27T09:00:00Z, or an age like 12h, 7d, 4w or 1h30m")]
pub struct SinceError(pub String);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_numbers_keep_their_unit_and_durations_have_theirs() {
        assert_eq!("30".parse::<Secs>(), Ok(Secs(30.0)));
        assert_eq!("0.5".parse::<Secs>(), Ok(Secs(0.5)));
        assert_eq!("90s".parse::<Secs>(), Ok(Secs(90.0)));
        assert_eq!("2m".parse::<Secs>(), Ok(Secs(120.0)));
        assert_eq!("1h30m".parse::<Secs>(), Ok(Secs(5400.0)));
        assert_eq!("500ms".parse::<Secs>(), Ok(Secs(0.5)));
        assert_eq!("300".parse::<Millis>(), Ok(Millis(300)));
        assert_eq!("1s".parse::<Millis>(), Ok(Millis(1000)));
        assert_eq!("2m".parse::<Millis>(), Ok(Millis(120_000)));
        assert_eq!("100".parse::<Micros>(), Ok(Micros(100)));
        assert_eq!("1ms".parse::<Micros>(), Ok(Micros(1000)));
        for bad in ["", "x", "-1", "10 parsecs", "NaN", "inf"] {
            assert!(bad.parse::<Secs>().is_err(), "{bad}");
        }
        assert_eq!(
            "fast".parse::<Millis>().unwrap_err().to_string(),
            "'fast' is not a length of time: give a number of milliseconds or a duration with units, such as 90s, 2m, 1h30m or 500ms"
        );
        assert_eq!(Secs(10.0).to_string(), "10");
        assert_eq!(Millis(5000).to_string(), "5000");
    }

    #[test]
    fn plans_give_numbers_or_text() {
        #[derive(Deserialize)]
        struct Step {
            time: Secs,
            timeout_ms: Millis,
        }
        let s: Step = toml::from_str("time = 5\ntimeout_ms = \"2s\"").unwrap();
        assert_eq!((s.time, s.timeout_ms), (Secs(5.0), Millis(2000)));
        let s: Step = toml::from_str("time = \"1m\"\ntimeout_ms = 300").unwrap();
        assert_eq!((s.time, s.timeout_ms), (Secs(60.0), Millis(300)));
        assert!(toml::from_str::<Step>("time = \"soon\"\ntimeout_ms = 1").is_err());
    }

    #[test]
    fn since_takes_dates_times_and_ages() {
        let now = 1_800_000_000; // 2027-01-15T08:00:00Z
        assert_eq!(since("2026-11-27", now).unwrap(), "2026-11-27T00:00:00Z");
        assert_eq!(since("2026-11-27T09:00:00Z", now).unwrap(), "2026-11-27T09:00:00Z");
        assert_eq!(since("2026-11-27T10:00:00+01:00", now).unwrap(), "2026-11-27T09:00:00Z");
        assert_eq!(since("12h", now).unwrap(), stackmeter_sys::utc_rfc3339(now - 12 * 3600));
        assert_eq!(since("1h30m", now).unwrap(), stackmeter_sys::utc_rfc3339(now - 5400));
        assert_eq!(
            since("4w", now).unwrap(),
            stackmeter_sys::utc_rfc3339(now - 28 * 86_400)
        );
        for bad in ["2026-99-99", "2026-02-30", "yesterday", "2026-11-27T25:00:00Z", ""] {
            assert!(since(bad, now).is_err(), "{bad}");
        }
    }
}
