//! The control session's input: client records assembled from any chunking
//! of the byte stream, records of unknown types skipped by their length
//! whatever it is (docs/protocol.md 8.1).
//!
//! Only Snapshot and Stop mean anything to a responder, and both fit in
//! 8 bytes: the reader keeps at most 8 and skips the rest of any record.
//! It asks for at most 8 bytes at a time, so one read can complete at most
//! one Snapshot or Stop (every record is at least 4 bytes long, so a record
//! starting inside a read cannot reach its 8th byte in it) and the machine
//! answers each before the next is read.

use crate::control::{HEAD_LEN, SHORT_LEN, T_SNAPSHOT, T_STOP};

/// What a chunk of input completed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Record {
    /// Answer with a Report.
    Snapshot(u32),
    /// Stop the test, answer with the final Report once it drained.
    Stop(u32),
    /// A length the type cannot have: the stream cannot be followed.
    BadLength(u16),
}

/// The record being assembled.
#[derive(Clone, Debug)]
pub struct RecordReader {
    buf: [u8; SHORT_LEN],
    got: u8,
    /// Bytes of the current record still to skip.
    skip: u32,
}

impl RecordReader {
    pub const fn new() -> RecordReader {
        RecordReader {
            buf: [0; SHORT_LEN],
            got: 0,
            skip: 0,
        }
    }

    /// True between records (a close here is the normal end).
    pub fn idle(&self) -> bool {
        self.got == 0 && self.skip == 0
    }

    /// Bytes to read next.
    pub fn want(&self) -> usize {
        if self.skip > 0 {
            self.skip as usize
        } else {
            SHORT_LEN - self.got as usize
        }
    }

    /// Takes bytes from `data` up to the end of the first Snapshot or Stop
    /// (or bad record) in it; returns how many it took and that record.
    pub fn input(&mut self, data: &[u8]) -> (usize, Option<Record>) {
        let mut at = 0;
        while at < data.len() {
            if self.skip > 0 {
                let n = (data.len() - at).min(self.skip as usize);
                self.skip -= n as u32;
                at += n;
                continue;
            }
            let got = self.got as usize;
            let n = (data.len() - at).min(SHORT_LEN - got);
            self.buf[got..got + n].copy_from_slice(&data[at..at + n]);
            self.got += n as u8;
            at += n;
            if let Some(done) = self.head(&mut at) {
                return (at, Some(done));
            }
        }
        (at, None)
    }

    /// Looks at the kept bytes once the head is in: a complete Snapshot or
    /// Stop, a bad length, or an unknown record to skip. Kept bytes past the
    /// end of a short unknown record are given back (`at` moves back): they
    /// start the next record.
    fn head(&mut self, at: &mut usize) -> Option<Record> {
        let got = self.got as usize;
        if got < HEAD_LEN {
            return None;
        }
        let kind = u16::from_be_bytes([self.buf[0], self.buf[1]]);
        let len = u16::from_be_bytes([self.buf[2], self.buf[3]]);
        let known = kind == T_SNAPSHOT || kind == T_STOP;
        let need = if known { SHORT_LEN } else { HEAD_LEN };
        if (len as usize) < need {
            return Some(Record::BadLength(len));
        }
        if known && got < SHORT_LEN {
            return None;
        }
        self.got = 0;
        let len = len as usize;
        if len >= got {
            self.skip = (len - got) as u32;
        } else {
            *at -= got - len;
        }
        let id = u32::from_be_bytes([self.buf[4], self.buf[5], self.buf[6], self.buf[7]]);
        match kind {
            T_SNAPSHOT => Some(Record::Snapshot(id)),
            T_STOP => Some(Record::Stop(id)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::ClientRecord;

    fn feed(r: &mut RecordReader, mut bytes: &[u8], step: usize) -> [Option<Record>; 4] {
        let mut out = [None; 4];
        let mut k = 0;
        while !bytes.is_empty() {
            let n = bytes.len().min(step).min(r.want());
            let (took, rec) = r.input(&bytes[..n]);
            bytes = &bytes[took..];
            if let Some(rec) = rec {
                out[k] = Some(rec);
                k += 1;
            }
        }
        out
    }

    #[test]
    fn any_chunking_gives_the_same_records_and_long_unknowns_are_skipped() {
        let mut s = [0u8; 8 + 4 + 600 + 10 + 8];
        s[..8].copy_from_slice(&ClientRecord::Snapshot(1).emit());
        s[8..12].copy_from_slice(&[0, 99, 0, 4]);
        // An unknown record of 600 bytes: more than any buffer the reader has.
        s[12..16].copy_from_slice(&[0x7f, 0, 0x02, 0x58]);
        // A Stop of length 10 (2 trailing bytes skipped).
        s[612..620].copy_from_slice(&ClientRecord::Stop(2).emit());
        s[615] = 10;
        s[622..630].copy_from_slice(&ClientRecord::Snapshot(3).emit());
        let want = [
            Some(Record::Snapshot(1)),
            Some(Record::Stop(2)),
            Some(Record::Snapshot(3)),
            None,
        ];
        for step in [1, 3, 7, 8, 1000] {
            let mut r = RecordReader::new();
            assert_eq!(feed(&mut r, &s, step), want, "step {step}");
            assert!(r.idle());
        }
    }

    #[test]
    fn a_short_length_is_bad() {
        let mut r = RecordReader::new();
        assert_eq!(r.input(&[0, 1, 0, 4]).1, Some(Record::BadLength(4)));
        let mut r = RecordReader::new();
        assert_eq!(r.input(&[0, 9, 0, 3]).1, Some(Record::BadLength(3)));
    }
}
