//! A new identity for a run or a test (the `uid` that survives copies).

use crate::hex;

/// A new identity for a run or a test: 128 random bits in hexadecimal,
/// from the kernel (or, where /dev/urandom cannot be read, from the
/// standard library's randomly keyed hasher).
pub(crate) fn new_uid() -> String {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    let read = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes));
    if read.is_err() {
        use std::hash::{BuildHasher, Hasher};
        for (i, half) in bytes.chunks_mut(8).enumerate() {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_usize(i);
            h.write_u32(std::process::id());
            half.copy_from_slice(&h.finish().to_le_bytes());
        }
    }
    hex::encode(bytes)
}
