//! Reasons as text without allocation: a fixed buffer that `write!` fills.
//!
//! Refusals, aborted sessions and object errors carry a short UTF-8 reason
//! ("request size 100000000 exceeds limit 1048576"). The machine formats it
//! with `core::fmt` into a [`Reason`], only on those rare paths, never per
//! message. Text past [`Reason::CAPACITY`] bytes is cut at a character
//! boundary, as the status record requires.

use core::fmt;

/// Up to 255 bytes of UTF-8 text, filled with `write!`.
#[derive(Clone)]
pub struct Reason {
    buf: [u8; Reason::CAPACITY],
    len: u8,
    /// Set once something did not fit: later pieces are dropped too, so a
    /// cut reason never has a hole in the middle.
    full: bool,
}

impl Reason {
    /// Longest reason: what a status record or an object response carries.
    pub const CAPACITY: usize = 255;

    /// Empty text.
    pub const fn new() -> Reason {
        Reason {
            buf: [0; Reason::CAPACITY],
            len: 0,
            full: false,
        }
    }

    /// The text of `args`, cut to the capacity.
    pub fn of(args: fmt::Arguments<'_>) -> Reason {
        let mut r = Reason::new();
        // write_str never fails (it cuts instead), so neither does this.
        let _ = fmt::write(&mut r, args);
        r
    }

    /// The text so far.
    pub fn as_str(&self) -> &str {
        // Only whole characters of `&str`s are ever copied in.
        core::str::from_utf8(&self.buf[..self.len as usize]).unwrap_or_default()
    }

    /// Forgets the text.
    pub fn clear(&mut self) {
        self.len = 0;
        self.full = false;
    }

    /// Appends bytes that should be text: valid UTF-8 as it is, anything
    /// else as U+FFFD (for names a client sent).
    pub fn push_lossy(&mut self, bytes: &[u8]) {
        for chunk in bytes.utf8_chunks() {
            let _ = fmt::Write::write_str(self, chunk.valid());
            if !chunk.invalid().is_empty() {
                let _ = fmt::Write::write_str(self, "\u{FFFD}");
            }
        }
    }
}

impl Default for Reason {
    fn default() -> Self {
        Reason::new()
    }
}

impl fmt::Write for Reason {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        if self.full {
            return Ok(());
        }
        let at = self.len as usize;
        let mut n = s.len().min(Reason::CAPACITY - at);
        if n < s.len() {
            self.full = true;
            while !s.is_char_boundary(n) {
                n -= 1;
            }
        }
        self.buf[at..at + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len = (at + n) as u8;
        Ok(())
    }
}

impl fmt::Debug for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::fmt::Write;

    #[test]
    fn cuts_at_a_character_boundary_and_stays_cut() {
        let mut r = Reason::new();
        for _ in 0..200 {
            write!(r, "é").unwrap();
        }
        assert_eq!(r.as_str().len(), 254);
        write!(r, "x").unwrap();
        assert_eq!(r.as_str().len(), 254, "nothing after the cut");
        r.clear();
        r.push_lossy(b"a\xffb");
        assert_eq!(r.as_str(), "a\u{FFFD}b");
        assert_eq!(Reason::of(format_args!("{} of {}", 3, 10)).as_str(), "3 of 10");
    }
}
