//! Parses rates: bits per second with SI multipliers ("200M", "1.5G",
//! "800k", as iperf3's `-b`), or packets per second ("50kpps", "2Mpps",
//! "1000pps"). k = 1000 here, as is usual for rates; sizes use K = 1024.

/// A rate as given.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Rate {
    /// Bits of UDP payload per second.
    Bits(f64),
    /// Datagrams per second.
    Packets(f64),
}

impl Rate {
    /// Datagrams per second for `length`-byte datagrams.
    pub fn pps(self, length: u32) -> f64 {
        match self {
            Rate::Bits(b) => b / (8.0 * length as f64),
            Rate::Packets(p) => p,
        }
    }
}

/// A rate that does not parse; each names the text given.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RateError {
    /// No number.
    #[error("'{0}' is not a rate (expected for example 200M, 1.5G or 50kpps)")]
    NotARate(String),
    /// A unit other than k, M or G.
    #[error("'{text}' has an unknown unit '{unit}' (use k, M or G, optionally followed by pps)")]
    UnknownUnit {
        /// The rate as given.
        text: String,
        /// Its unit.
        unit: String,
    },
    /// Zero, negative or not finite.
    #[error("'{0}' must be above zero")]
    NotPositive(String),
}

/// Parses a rate; the error names what was wrong.
pub fn rate(s: &str) -> Result<Rate, RateError> {
    let t = s.trim();
    let lower = t.to_ascii_lowercase();
    let (body, packets) = match lower.strip_suffix("pps") {
        Some(b) => (b, true),
        None => (
            lower
                .strip_suffix("bps")
                .or_else(|| lower.strip_suffix("bit/s"))
                .unwrap_or(&lower),
            false,
        ),
    };
    let split = body
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(body.len());
    let (num, unit) = body.split_at(split);
    let n: f64 = num.parse().map_err(|_| RateError::NotARate(s.into()))?;
    let mult = match unit {
        "" => 1.0,
        "k" => 1e3,
        "m" => 1e6,
        "g" => 1e9,
        _ => {
            return Err(RateError::UnknownUnit {
                text: s.into(),
                unit: unit.into(),
            })
        }
    };
    let v = n * mult;
    if !(v.is_finite() && v > 0.0) {
        return Err(RateError::NotPositive(s.into()));
    }
    Ok(if packets { Rate::Packets(v) } else { Rate::Bits(v) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_and_packets() {
        assert_eq!(rate("200M"), Ok(Rate::Bits(200e6)));
        assert_eq!(rate("1.5G"), Ok(Rate::Bits(1.5e9)));
        assert_eq!(rate("50kpps"), Ok(Rate::Packets(50e3)));
        assert_eq!(rate("2Mpps"), Ok(Rate::Packets(2e6)));
        assert_eq!(rate("100Mbps"), Ok(Rate::Bits(100e6)));
        assert_eq!(rate("1000"), Ok(Rate::Bits(1000.0)));
        assert_eq!(Rate::Bits(8e6).pps(1000), 1000.0);
    }

    #[test]
    fn errors_name_the_input() {
        assert_eq!(rate("fast"), Err(RateError::NotARate("fast".into())));
        assert_eq!(
            rate("10X").unwrap_err().to_string(),
            "'10X' has an unknown unit 'x' (use k, M or G, optionally followed by pps)"
        );
        assert_eq!(rate("0M"), Err(RateError::NotPositive("0M".into())));
    }
}
