//! The text that is part of a value, not of its drawing: a size as a
//! row's label ("1 KiB", the name a figure is stored and compared under)
//! and a number as the runs list's key figure carries it. How a view
//! writes rates is the render crate's (`units`).

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

/// A value with a sensible number of digits.
pub fn num(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{v:.4e}")
    } else if a >= 1000.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.3}")
    } else {
        format!("{v:.4}")
    }
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
}
