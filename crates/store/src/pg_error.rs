//! What a PostgreSQL driver error means to the store, and how it reads in
//! one line: whether the server cannot be used now (so results wait in the
//! spool) or refused what was asked, and the server's or the driver's words
//! without line breaks. A leaf: the connection and the URL check both use it.

/// Whether an error means the server cannot be used now (down, gone,
/// starting, out of connections) rather than that it refused what was
/// asked: the first kind is spooled, the second reported.
pub(crate) fn is_lost(e: &postgres::Error) -> bool {
    if let Some(db) = e.as_db_error() {
        let code = db.code().code();
        return code.starts_with("08") || code.starts_with("57P") || code.starts_with("53");
    }
    let io = std::error::Error::source(e).is_some_and(|s| s.downcast_ref::<std::io::Error>().is_some());
    // The driver's own timeout kind has no source and no public test.
    io || e.is_closed() || e.to_string().starts_with("timeout")
}

/// One line for a driver error: the server's message for a server error,
/// else the driver's words with their causes ("error connecting to server:
/// Connection refused (os error 111)").
pub(crate) fn describe(e: &postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return db.message().to_string();
    }
    let mut out = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        let s = c.to_string();
        if !out.contains(&s) {
            out.push_str(": ");
            out.push_str(&s);
        }
        cause = c.source();
    }
    out.replace('\n', " ")
}
