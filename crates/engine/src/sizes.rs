//! Parses sizes and size lists ("64", "1K", "8800K", "1M") and size-pair lists
//! ("1:1K,1K:1"). K = 1024, M = 1048576, G = 1073741824; "KB", "KiB" and
//! lower case mean the same. Errors name the item that failed.

use stackmeter_results::SizePair;

/// Parses one size in bytes (1 .. 4 GiB - 1).
pub fn size(s: &str) -> Result<u32, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    if digits.is_empty() {
        return Err(format!("'{s}' is not a size (expected a number such as 64, 1K or 1M)"));
    }
    let mult: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => return Err(format!("'{s}' has an unknown unit '{unit}' (use K, M or G; K = 1024)")),
    };
    let n: u64 = digits.parse().map_err(|_| format!("'{s}' is too large"))?;
    let v = n
        .checked_mul(mult)
        .filter(|&v| v <= u32::MAX as u64)
        .ok_or_else(|| format!("'{s}' is too large (at most 4G - 1)"))?;
    if v == 0 {
        return Err(format!("'{s}' is zero; sizes start at 1 byte"));
    }
    Ok(v as u32)
}

/// Parses "REQ:RESP".
pub fn pair(s: &str) -> Result<SizePair, String> {
    let (a, b) = s
        .split_once(':')
        .ok_or_else(|| format!("'{s}' is not REQUEST:RESPONSE (for example 1:1K)"))?;
    Ok(SizePair {
        req: size(a).map_err(|e| format!("in '{s}': {e}"))?,
        resp: size(b).map_err(|e| format!("in '{s}': {e}"))?,
    })
}

/// Parses a comma-separated list of pairs; the first bad item is named.
pub fn pairs(s: &str) -> Result<Vec<SizePair>, String> {
    let v: Result<Vec<_>, _> = s.split(',').map(|item| pair(item.trim())).collect();
    match v {
        Ok(v) if !v.is_empty() => Ok(v),
        Ok(_) => Err("empty size list".into()),
        Err(e) => Err(format!("bad size list item {e}")),
    }
}

/// Object sizes as a flag value: parsed by [`size_list`], printed back
/// the way a user writes them ("4K,64K,1M,8800K").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectSizes(pub Vec<u64>);

impl std::str::FromStr for ObjectSizes {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
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
pub fn size_list(s: &str) -> Result<Vec<u64>, String> {
    let v = s
        .split(',')
        .map(|i| size(i).map(u64::from).map_err(|e| format!("bad size list item: {e}")))
        .collect::<Result<Vec<u64>, String>>()?;
    if v.len() > stackmeter_proto::limits::MAX_OBJECTS {
        return Err(format!(
            "{} objects, at most {}",
            v.len(),
            stackmeter_proto::limits::MAX_OBJECTS
        ));
    }
    let total: u64 = v.iter().sum();
    if total > stackmeter_responder::MAX_SYNTHETIC_BYTES {
        return Err(format!("the objects total {total} bytes; at most 1G"));
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
        let e = pairs("1:1K,1:1Q,2:2").unwrap_err();
        assert!(e.contains("'1:1Q'") && e.contains("unknown unit 'Q'"), "{e}");
        assert!(pairs("1:1K,64").unwrap_err().contains("'64' is not REQUEST:RESPONSE"));
        assert!(size("0").unwrap_err().contains("zero"));
        assert!(size("4G").unwrap_err().contains("too large"));
        assert!(size("99999999999999999999999").unwrap_err().contains("too large"));
        assert!(size("K").is_err());
    }

    #[test]
    fn object_size_lists() {
        assert_eq!(size_list("4K,64K,1M,8800K").unwrap()[3], 8800 << 10);
        assert!(size_list("4K,,1M").unwrap_err().contains("bad size list item"));
        assert!(size_list("1G,1G").unwrap_err().contains("at most 1G"));
        let d = ObjectSizes(vec![4 << 10, 64 << 10, 1 << 20, 8800 << 10, 100]);
        assert_eq!(d.to_string(), "4K,64K,1M,8800K,100");
        assert_eq!(d.to_string().parse::<ObjectSizes>().unwrap(), d);
    }
}
