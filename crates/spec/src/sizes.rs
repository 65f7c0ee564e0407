//! Parses sizes and size lists ("64", "1K", "8800K", "1M") and size-pair lists
//! ("1:1K,1K:1"). K = 1024, M = 1048576, G = 1073741824; "KiB" and lower
//! case mean the same. "KB" (and "MB", "GB") is refused with a hint: some
//! read it as 1000, some as 1024, and a size taken the other way measures
//! another test. Errors name the item that failed.

use stackmeter_results::SizePair;

/// A size, pair or list that does not parse; each names the text to blame.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    /// No number at the start.
    #[error("'{0}' is not a size (expected a number such as 64, 1K or 1M)")]
    NotASize(String),
    /// A unit other than K, M or G.
    #[error("'{text}' has an unknown unit '{unit}' (use K, M or G; K = 1024)")]
    UnknownUnit {
        /// The size as given.
        text: String,
        /// Its unit.
        unit: String,
    },
    /// KB, MB or GB: 1000 to some, 1024 to others.
    #[error("'{text}': {unit} is 1000 to some and 1024 to others; write {n}{k} for {n} x 1024 bytes (K = 1024, M = 1048576) or the number of bytes")]
    Ambiguous {
        /// The size as given.
        text: String,
        /// Its unit.
        unit: String,
        /// The number before it.
        n: String,
        /// The unit stackmeter means by 1024s.
        k: char,
    },
    /// More than the digits can hold.
    #[error("'{0}' is too large")]
    Overflow(String),
    /// 4 GiB or more.
    #[error("'{0}' is too large (at most 4G - 1)")]
    TooLarge(String),
    /// Zero bytes.
    #[error("'{0}' is zero; sizes start at 1 byte")]
    Zero(String),
    /// A pair without its colon.
    #[error("'{0}' is not REQUEST:RESPONSE (for example 1:1K)")]
    NotAPair(String),
    /// A pair with a bad size in it.
    #[error("in '{pair}': {size}")]
    InPair {
        /// The pair as given.
        pair: String,
        /// What is wrong with its size.
        size: Box<SizeError>,
    },
    /// A list with nothing in it.
    #[error("empty size list")]
    Empty,
    /// The first bad item of a pair list.
    #[error("bad size list item {0}")]
    PairItem(Box<SizeError>),
    /// The first bad item of an object size list.
    #[error("bad size list item: {0}")]
    ObjectItem(Box<SizeError>),
    /// More objects than a responder's catalogue holds.
    #[error("{0} objects, at most {max}", max = stackmeter_proto::limits::MAX_OBJECTS)]
    TooMany(usize),
    /// Objects that together exceed what a responder makes.
    #[error("the objects total {0} bytes; at most 1G")]
    TooBig(u64),
}

/// Parses one size in bytes (1 .. 4 GiB - 1).
pub fn size(s: &str) -> Result<u32, SizeError> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    if digits.is_empty() {
        return Err(SizeError::NotASize(s.into()));
    }
    let mult: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "kb" | "mb" | "gb" => {
            return Err(SizeError::Ambiguous {
                text: s.into(),
                unit: unit.into(),
                n: digits.into(),
                k: unit.chars().next().map_or('K', |c| c.to_ascii_uppercase()),
            })
        }
        _ => {
            return Err(SizeError::UnknownUnit {
                text: s.into(),
                unit: unit.into(),
            })
        }
    };
    let n: u64 = digits.parse().map_err(|_| SizeError::Overflow(s.into()))?;
    let v = n
        .checked_mul(mult)
        .filter(|&v| v <= u32::MAX as u64)
        .ok_or_else(|| SizeError::TooLarge(s.into()))?;
    if v == 0 {
        return Err(SizeError::Zero(s.into()));
    }
    Ok(v as u32)
}

/// Parses "REQ:RESP".
pub fn pair(s: &str) -> Result<SizePair, SizeError> {
    let (a, b) = s.split_once(':').ok_or_else(|| SizeError::NotAPair(s.into()))?;
    let in_pair = |e| SizeError::InPair {
        pair: s.into(),
        size: Box::new(e),
    };
    Ok(SizePair {
        req: size(a).map_err(in_pair)?,
        resp: size(b).map_err(in_pair)?,
    })
}

/// Parses a comma-separated list of pairs; the first bad item is named.
pub fn pairs(s: &str) -> Result<Vec<SizePair>, SizeError> {
    let v: Result<Vec<_>, _> = s.split(',').map(|item| pair(item.trim())).collect();
    match v {
        Ok(v) if !v.is_empty() => Ok(v),
        Ok(_) => Err(SizeError::Empty),
        Err(e) => Err(SizeError::PairItem(Box::new(e))),
    }
}

/// Object sizes as a flag value: parsed by [`size_list`], printed back
/// the way a user writes them ("4K,64K,1M,8800K").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectSizes(pub Vec<u64>);

impl std::str::FromStr for ObjectSizes {
    type Err = SizeError;
    fn from_str(s: &str) -> Result<Self, SizeError> {
        size_list(s).map(ObjectSizes)
    }
}

impl std::fmt::Display for ObjectSizes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let items: Vec<String> = self
            .0
            .iter()
            .map(|&b| match b {
                b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{}M", b >> 20),
                b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{}K", b >> 10),
                b => b.to_string(),
            })
            .collect();
        write!(f, "{}", items.join(","))
    }
}

/// Parses an object size list ("4K,64K,1M,8800K"); the first bad item is
/// named, and the list must fit a responder's catalogue.
pub fn size_list(s: &str) -> Result<Vec<u64>, SizeError> {
    let v = s
        .split(',')
        .map(|i| size(i).map(u64::from).map_err(|e| SizeError::ObjectItem(Box::new(e))))
        .collect::<Result<Vec<u64>, SizeError>>()?;
    if v.len() > stackmeter_proto::limits::MAX_OBJECTS {
        return Err(SizeError::TooMany(v.len()));
    }
    let total: u64 = v.iter().sum();
    if total > stackmeter_proto::limits::MAX_SYNTHETIC_BYTES {
        return Err(SizeError::TooBig(total));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(size("64"), Ok(64));
        assert_eq!(size("1K"), Ok(1024));
        assert_eq!(size("1kib"), Ok(1024));
        assert_eq!(size("1M"), Ok(1 << 20));
        assert_eq!(size("8800K"), Ok(8800 * 1024));
        assert_eq!(size("3G"), Ok(3 << 30));
    }

    #[test]
    fn latency_grid_pairs() {
        let v = pairs("1:1K,1:10K,1:100K,1:1M,1K:1,10K:1,100K:1,1M:1").unwrap();
        assert_eq!(v.len(), 8);
        assert_eq!(v[3], SizePair { req: 1, resp: 1 << 20 });
        assert_eq!(v[4], SizePair { req: 1024, resp: 1 });
    }

    #[test]
    fn errors_name_the_item() {
        let e = pairs("1:1K,1:1Q,2:2").unwrap_err().to_string();
        assert_eq!(
            e,
            "bad size list item in '1:1Q': '1Q' has an unknown unit 'Q' (use K, M or G; K = 1024)"
        );
        assert_eq!(
            pairs("1:1K,64").unwrap_err(),
            SizeError::PairItem(Box::new(SizeError::NotAPair("64".into())))
        );
        assert_eq!(size("0"), Err(SizeError::Zero("0".into())));
        assert_eq!(size("4G"), Err(SizeError::TooLarge("4G".into())));
        assert_eq!(
            size("99999999999999999999999"),
            Err(SizeError::Overflow("99999999999999999999999".into()))
        );
        assert_eq!(size("K"), Err(SizeError::NotASize("K".into())));
        assert_eq!(size("1KiB"), Ok(1024));
        assert_eq!(
            pairs("1:1KB").unwrap_err().to_string(),
            "bad size list item in '1:1KB': '1KB': KB is 1000 to some and 1024 to others; write 1K for 1 x 1024 bytes (K = 1024, M = 1048576) or the number of bytes"
        );
        assert!(matches!(size("8mb"), Err(SizeError::Ambiguous { .. })));
    }

    #[test]
    fn object_size_lists() {
        assert_eq!(size_list("4K,64K,1M,8800K").unwrap()[3], 8800 << 10);
        assert!(size_list("4K,,1M")
            .unwrap_err()
            .to_string()
            .starts_with("bad size list item: "));
        assert_eq!(size_list("1G,1G"), Err(SizeError::TooBig(2 << 30)));
        let d = ObjectSizes(vec![4 << 10, 64 << 10, 1 << 20, 8800 << 10, 100]);
        assert_eq!(d.to_string(), "4K,64K,1M,8800K,100");
        assert_eq!(d.to_string().parse::<ObjectSizes>().unwrap(), d);
    }
}
