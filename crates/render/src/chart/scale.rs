//! The unit an axis' values are written in: the one of the same kind that
//! suits the range (60000 us is 60 ms).

/// Units of one kind, smallest first, with their size in the kind's base.
const FAMILIES: &[&[(&str, f64)]] = &[
    &[("ns", 1e-9), ("us", 1e-6), ("ms", 1e-3), ("s", 1.0)],
    &[
        ("bit/s", 1.0),
        ("kbit/s", 1e3),
        ("Mbit/s", 1e6),
        ("Gbit/s", 1e9),
        ("Tbit/s", 1e12),
    ],
    &[("pps", 1.0), ("kpps", 1e3), ("Mpps", 1e6)],
    &[("tps", 1.0), ("ktps", 1e3), ("Mtps", 1e6)],
    &[("cps", 1.0), ("kcps", 1e3), ("Mcps", 1e6)],
    &[
        ("B/s", 1.0),
        ("KiB/s", 1024.0),
        ("MiB/s", 1048576.0),
        ("GiB/s", 1073741824.0),
    ],
    &[("B", 1.0), ("KiB", 1024.0), ("MiB", 1048576.0), ("GiB", 1073741824.0)],
];

/// The unit to label values of `unit` up to `largest` (absolute) with, and
/// the number to divide them by: the largest unit of the same kind in
/// which `largest` is still 1 or more (60000 us: ms, divide by 1000).
/// Units of no known kind are kept.
pub fn scale_unit(unit: &str, largest: f64) -> (String, f64) {
    let keep = (unit.to_string(), 1.0);
    let Some(family) = FAMILIES.iter().find(|f| f.iter().any(|u| u.0 == unit)) else {
        return keep;
    };
    let base = family.iter().find(|u| u.0 == unit).map_or(1.0, |u| u.1);
    if !(largest.is_finite() && largest > 0.0) {
        return keep;
    }
    let in_base = largest * base;
    let pick = family
        .iter()
        .rev()
        .find(|u| in_base >= u.1 * 0.999_999)
        .unwrap_or(&family[0]);
    // Every ratio between units of a kind is a whole number or its inverse.
    let r = pick.1 / base;
    let r = if r >= 1.0 { r.round() } else { 1.0 / (1.0 / r).round() };
    (pick.0.to_string(), r)
}
