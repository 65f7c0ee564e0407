//! The stamp block: a responder's receive and send times for one exchange,
//! carried in its reply so a client can split the round trip into stack
//! time and application time (docs/protocol.md section 4.3).
//!
//! ```text
//! offset size field
//!      0    4 magic "SMTS" (53 4d 54 53)
//!      4    1 flags: bit 0 app times valid, bit 1 kernel receive stamp
//!                    valid, bit 2 previous send stamp valid, bit 3 the
//!                    kernel stamps are the NIC's (hardware)
//!      5    3 reserved, 0
//!      8    8 kernel receive stamp of this request (ns)
//!     16    8 application receive: right after the request was read (ns)
//!     24    8 application send: right before the reply was sent (ns)
//!     32    8 id of an earlier reply to this client: its UDP sequence
//!               number, or its TCP transaction number (0 = the first
//!               request after the session header)
//!     40    8 kernel send stamp of that earlier reply (ns)
//! ```
//! All times are nanoseconds since the Unix epoch on the responder's
//! wall clock (CLOCK_REALTIME, the clock Linux kernel stamps are on). A
//! reply's own kernel send stamp exists only after it was sent, so it rides
//! in the next reply to the same client, named by its id.
//!
//! In UDP the block sits at offset 40 (right after the datagram header) of
//! a reply whose request set [`crate::udp::FLAG_STAMPS`]; in a TCP rr
//! session that asked for it ([`crate::header::FLAG_STAMPS`]) every
//! response starts with it.

use crate::be64;

/// The four bytes a stamp block starts with.
pub const MAGIC: [u8; 4] = *b"SMTS";
/// Length of a stamp block on the wire.
pub const BLOCK_LEN: usize = 48;

/// Flag bit: `app_rx` and `app_tx` are valid.
pub const HAS_APP: u8 = 1;
/// Flag bit: `rx_kernel` is valid.
pub const HAS_RX_KERNEL: u8 = 2;
/// Flag bit: `prev_id` and `prev_tx_kernel` are valid.
pub const HAS_PREV_TX: u8 = 4;
/// Flag bit: the kernel stamps come from the NIC's clock.
pub const HARDWARE: u8 = 8;

/// A responder's stamps for one exchange. `None` is a stamp the responder
/// does not have (its flag bit is clear and the field 0 on the wire).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Block {
    /// Application receive and send, ns.
    pub app: Option<(u64, u64)>,
    /// Kernel receive stamp of this request, ns.
    pub rx_kernel: Option<u64>,
    /// An earlier reply's id and its kernel send stamp, ns.
    pub prev_tx: Option<(u64, u64)>,
    /// The kernel stamps are hardware stamps.
    pub hardware: bool,
}

impl Block {
    /// Reads a block from the first [`BLOCK_LEN`] bytes of `b`; `None` when
    /// `b` is shorter or does not start with [`MAGIC`] (a responder that
    /// does not know stamps echoed payload there).
    pub fn parse(b: &[u8]) -> Option<Block> {
        if b.len() < BLOCK_LEN || b[0..4] != MAGIC {
            return None;
        }
        let f = b[4];
        Some(Block {
            app: (f & HAS_APP != 0).then(|| (be64(b, 16), be64(b, 24))),
            rx_kernel: (f & HAS_RX_KERNEL != 0).then(|| be64(b, 8)),
            prev_tx: (f & HAS_PREV_TX != 0).then(|| (be64(b, 32), be64(b, 40))),
            hardware: f & HARDWARE != 0,
        })
    }

    /// The wire bytes of this block.
    pub fn emit(&self) -> [u8; BLOCK_LEN] {
        let mut b = [0u8; BLOCK_LEN];
        b[0..4].copy_from_slice(&MAGIC);
        let mut f = 0;
        let mut put = |at: usize, v: u64| b[at..at + 8].copy_from_slice(&v.to_be_bytes());
        if let Some(ns) = self.rx_kernel {
            f |= HAS_RX_KERNEL;
            put(8, ns);
        }
        if let Some((rx, tx)) = self.app {
            f |= HAS_APP;
            put(16, rx);
            put(24, tx);
        }
        if let Some((id, ns)) = self.prev_tx {
            f |= HAS_PREV_TX;
            put(32, id);
            put(40, ns);
        }
        if self.hardware {
            f |= HARDWARE;
        }
        b[4] = f;
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_flags() {
        let b = Block {
            app: Some((1_000, 2_500)),
            rx_kernel: Some(900),
            prev_tx: Some((6, 700)),
            hardware: false,
        };
        let w = b.emit();
        assert_eq!(&w[0..5], b"SMTS\x07");
        assert_eq!(Block::parse(&w), Some(b));
        let none = Block::default().emit();
        assert_eq!(none[4], 0);
        assert!(none[5..].iter().all(|&x| x == 0));
        assert_eq!(Block::parse(&none), Some(Block::default()));
    }

    #[test]
    fn short_or_foreign_is_no_block() {
        let w = Block::default().emit();
        assert_eq!(Block::parse(&w[..47]), None);
        let mut p = [0u8; 48];
        crate::pattern::fill(3, &mut p);
        assert_eq!(Block::parse(&p), None);
    }
}
