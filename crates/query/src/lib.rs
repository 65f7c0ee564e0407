//! Reading the results store back: which stored tests a name means and
//! the comparison of two such sides (or a decided run's own decision), the
//! list of runs, a run again as its command printed it, exports, the
//! report's sources, fleet runs as pairs and two of them compared, and
//! every stored figure as a series judged for change points (`history`, or
//! a CSV file's series).
//!
//! The read side of the store, beside the engine (which measures and
//! writes): values out, nothing printed; the binary renders them.

pub mod error;
pub mod fleet;
pub mod history;
pub mod report;
pub mod stored;

pub use error::Error;
