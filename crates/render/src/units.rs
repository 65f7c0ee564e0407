//! Rates as a reader writes them, shared by the views: bit rates with
//! decimal prefixes (k = 1000, as links are rated), byte rates with binary
//! ones, one spelling everywhere (`Mbit/s`, `kpps`, `MiB/s`), scaled to
//! the value unless the user fixes the unit (`--units`, as iperf3's
//! `-f`). Sizes as row labels are part of the values
//! (`stackmeter_results::format_size`).

/// How bit rates are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Units {
    /// Scaled to the value: bit/s, kbit/s, Mbit/s or Gbit/s.
    #[default]
    Adaptive,
    /// Always kbit/s.
    Kbit,
    /// Always Mbit/s.
    Mbit,
    /// Always Gbit/s.
    Gbit,
    /// As bytes: always KiB/s.
    KiB,
    /// As bytes: always MiB/s.
    MiB,
    /// As bytes: always GiB/s.
    GiB,
}

impl Units {
    /// iperf3's letters: `a` adaptive, `k` `m` `g` bits, `K` `M` `G` bytes.
    pub fn parse(s: &str) -> Option<Units> {
        Some(match s {
            "a" => Units::Adaptive,
            "k" => Units::Kbit,
            "m" => Units::Mbit,
            "g" => Units::Gbit,
            "K" => Units::KiB,
            "M" => Units::MiB,
            "G" => Units::GiB,
            _ => return None,
        })
    }
}

/// A bit rate given in Mbit/s, written in `u` ("17.54 Gbit/s").
pub fn bit_rate(mbps: f64, u: Units) -> String {
    let bits = mbps * 1e6;
    let (div, unit) = match u {
        Units::Adaptive if bits.abs() >= 1e9 => (1e9, "Gbit/s"),
        Units::Adaptive if bits.abs() >= 1e6 => (1e6, "Mbit/s"),
        Units::Adaptive if bits.abs() >= 1e3 => (1e3, "kbit/s"),
        Units::Adaptive => return format!("{bits:.0} bit/s"),
        Units::Kbit => (1e3, "kbit/s"),
        Units::Mbit => (1e6, "Mbit/s"),
        Units::Gbit => (1e9, "Gbit/s"),
        Units::KiB => (8.0 * 1024.0, "KiB/s"),
        Units::MiB => (8.0 * 1048576.0, "MiB/s"),
        Units::GiB => (8.0 * 1073741824.0, "GiB/s"),
    };
    format!("{:.2} {unit}", bits / div)
}

/// A packet rate (datagrams, frames), scaled: "812 pps", "32.4 kpps",
/// "1.64 Mpps".
pub fn packet_rate(pps: f64) -> String {
    if pps.abs() >= 1e6 {
        format!("{:.2} Mpps", pps / 1e6)
    } else if pps.abs() >= 1e3 {
        format!("{:.1} kpps", pps / 1e3)
    } else {
        format!("{pps:.0} pps")
    }
}

/// A message rate, scaled: "812 msg/s", "29.2 k msg/s", "1.64 M msg/s":
/// writes of a TCP stream, which its segments do not follow one for one.
pub fn message_rate(per_s: f64) -> String {
    if per_s.abs() >= 1e6 {
        format!("{:.2} M msg/s", per_s / 1e6)
    } else if per_s.abs() >= 1e3 {
        format!("{:.1} k msg/s", per_s / 1e3)
    } else {
        format!("{per_s:.0} msg/s")
    }
}

/// A byte rate, scaled with binary prefixes: "61.23 MiB/s".
pub fn byte_rate(bytes_per_s: f64) -> String {
    const K: f64 = 1024.0;
    if bytes_per_s.abs() >= K * K * K {
        format!("{:.2} GiB/s", bytes_per_s / (K * K * K))
    } else if bytes_per_s.abs() >= K * K {
        format!("{:.2} MiB/s", bytes_per_s / (K * K))
    } else if bytes_per_s.abs() >= K {
        format!("{:.2} KiB/s", bytes_per_s / K)
    } else {
        format!("{bytes_per_s:.0} B/s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_scale_and_keep_one_spelling() {
        assert_eq!(bit_rate(17535.93, Units::Adaptive), "17.54 Gbit/s");
        assert_eq!(bit_rate(540.0, Units::Adaptive), "540.00 Mbit/s");
        assert_eq!(bit_rate(0.5, Units::Adaptive), "500.00 kbit/s");
        assert_eq!(bit_rate(0.0, Units::Adaptive), "0 bit/s");
        assert_eq!(bit_rate(17535.93, Units::Mbit), "17535.93 Mbit/s");
        assert_eq!(bit_rate(8.0 * 1.048576, Units::MiB), "1.00 MiB/s");
        assert_eq!(packet_rate(32_400.0), "32.4 kpps");
        assert_eq!(packet_rate(1_640_000.0), "1.64 Mpps");
        assert_eq!(packet_rate(812.0), "812 pps");
        assert_eq!(byte_rate(62_700.0 * 1024.0), "61.23 MiB/s");
        assert_eq!(Units::parse("G"), Some(Units::GiB));
        assert_eq!(Units::parse("x"), None);
    }
}
