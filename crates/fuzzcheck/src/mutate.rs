//! A small seeded mutator for the stable short run: what libFuzzer does
//! first to a corpus (flip bits, set bytes to boundary values, insert,
//! delete, duplicate, splice two inputs), without coverage feedback. It
//! lets `cargo test` on stable exercise every target beyond its corpus,
//! the same inputs on every run.

/// xorshift64*: a fixed sequence from its seed.
pub struct Rng(u64);

impl Rng {
    /// A generator; the seed 0 is replaced (xorshift stays at 0).
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    /// The next 64 random bits.
    pub fn bits(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number below `n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.bits() % n.max(1) as u64) as usize
    }
}

/// Bytes libFuzzer also tries first: the ends of signed and unsigned ranges.
const INTERESTING: [u8; 8] = [0, 1, 0x7f, 0x80, 0xff, 0x10, 0x20, 0x40];
/// Longest input the mutator builds.
const MAX_LEN: usize = 8192;

/// Applies 1 to 8 random mutations to `input`; `others` are the corpus to
/// splice from.
pub fn mutate(rng: &mut Rng, input: &mut Vec<u8>, others: &[Vec<u8>]) {
    for _ in 0..1 + rng.below(8) {
        let len = input.len();
        match rng.below(8) {
            0 if len > 0 => {
                let i = rng.below(len);
                input[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let i = rng.below(len);
                input[i] = INTERESTING[rng.below(INTERESTING.len())];
            }
            2 if len > 0 => {
                let i = rng.below(len);
                input[i] = rng.bits() as u8;
            }
            3 => {
                let at = rng.below(len + 1);
                let n = 1 + rng.below(16);
                let bytes: Vec<u8> = (0..n).map(|_| rng.bits() as u8).collect();
                input.splice(at..at, bytes);
            }
            4 if len > 0 => {
                let at = rng.below(len);
                let n = 1 + rng.below((len - at).min(32));
                input.drain(at..at + n);
            }
            5 if len > 0 => {
                let at = rng.below(len);
                let n = 1 + rng.below((len - at).min(64));
                let piece = input[at..at + n].to_vec();
                let to = rng.below(len + 1);
                input.splice(to..to, piece);
            }
            6 if !others.is_empty() => {
                let other = &others[rng.below(others.len())];
                if !other.is_empty() {
                    let at = rng.below(other.len());
                    let n = 1 + rng.below(other.len() - at);
                    let to = rng.below(len + 1);
                    input.splice(to..to, other[at..at + n].iter().copied());
                }
            }
            7 if len > 4 => {
                // A big-endian 32-bit field set to a boundary.
                let at = rng.below(len - 3);
                let v: u32 = [0, 1, 0x7fff_ffff, 0x8000_0000, u32::MAX, 1 << 20, 1 << 26][rng.below(7)];
                input[at..at + 4].copy_from_slice(&v.to_be_bytes());
            }
            _ => input.truncate(rng.below(len + 1)),
        }
    }
    input.truncate(MAX_LEN);
}
