//! Sizes as a reader writes them, shared by the views.

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
