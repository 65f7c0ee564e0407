//! A test as the store keeps it: what a measuring command hands over (the
//! document with its histograms and interval series) and what reading it
//! back returns.

use crate::hex;
use stackmeter_results::Document;

/// One full distribution kept with a test (written and read back alike).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Histogram {
    /// Row index in the document.
    pub row: usize,
    /// JSON key of the figure it backs.
    pub metric: String,
    /// Unit of the recorded values ("ns").
    pub unit: String,
    /// Encoding name of `data`.
    pub encoding: String,
    /// The bytes (hexadecimal in a spool file).
    #[serde(with = "hex")]
    pub data: Vec<u8>,
}

/// One point of a per-interval series.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StoredInterval {
    /// Row index in the document.
    pub row: usize,
    /// Series name ("total", "sent", "received").
    pub series: String,
    /// Interval number from 0.
    pub seq: usize,
    /// Start, seconds from the test's start.
    pub start_s: f64,
    /// End, seconds from the test's start.
    pub end_s: f64,
    /// The value over the interval.
    pub value: f64,
    /// Its unit.
    pub unit: String,
}

/// One test to write.
pub struct NewTest<'a> {
    /// Target label (`--label`, or the suite's LABEL=ADDR).
    pub label: &'a str,
    /// Repetition number from 0.
    pub repetition: usize,
    /// Plan step ("" for a single command).
    pub step: &'a str,
    /// The document as printed.
    pub doc: &'a Document,
    /// Its histograms.
    pub histograms: Vec<Histogram>,
    /// Its per-interval series.
    pub intervals: Vec<StoredInterval>,
}

/// A stored test.
#[derive(Clone, Debug)]
pub struct StoredTest {
    /// Test id.
    pub id: i64,
    /// Its run.
    pub run_id: i64,
    /// Order in the run.
    pub seq: i64,
    /// Label.
    pub label: String,
    /// Repetition from 0.
    pub repetition: usize,
    /// Plan step.
    pub step: String,
    /// The document.
    pub doc: Document,
}
