//! Where a store lives, as the user names it: a path (an SQLite file) or a
//! `postgres://` / `postgresql://` URL (a PostgreSQL database). Pure: the
//! URL is checked here and shown without its password everywhere, so no
//! error message, spool note or log line ever carries a secret.

use std::ffi::OsStr;
use std::fmt;
use std::path::{Path, PathBuf};

/// A store's place.
#[derive(Clone, PartialEq, Eq)]
pub enum Location {
    /// An SQLite file.
    Sqlite(PathBuf),
    /// A PostgreSQL database.
    Postgres(PgUrl),
}

/// A PostgreSQL URL, checked, with the form shown to people.
#[derive(Clone, PartialEq, Eq)]
pub struct PgUrl {
    /// As given (with any password): what the driver connects with.
    pub(crate) url: String,
    /// As shown: no password in the user part, no `password=` parameter.
    shown: String,
    /// As shown in a command to copy: `PASSWORD` where the password was.
    placeholder: String,
}

/// Why a `--db` value is not a usable URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadUrl {
    /// The URL without its password.
    pub shown: String,
    /// What is wrong.
    pub reason: String,
}

impl fmt::Display for BadUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bad results store URL {}: {}", self.shown, self.reason)
    }
}

const SCHEMES: [&str; 2] = ["postgres://", "postgresql://"];

impl Location {
    /// Reads a `--db` value or `$STACKMETER_DB`: a `postgres://` or
    /// `postgresql://` URL names a PostgreSQL database, anything else is
    /// an SQLite file's path.
    pub fn parse(arg: &OsStr) -> Result<Location, BadUrl> {
        match arg.to_str() {
            Some(s) if SCHEMES.iter().any(|p| s.starts_with(p)) => PgUrl::parse(s).map(Location::Postgres),
            // "postgres:/host/db", "postgresql:host": a URL mistyped, not a file name.
            Some(s) if ["postgres:", "postgresql:"].iter().any(|p| s.starts_with(p)) => Err(BadUrl {
                shown: redact(s, None),
                reason: "expected postgres://USER@HOST[:PORT]/DATABASE".into(),
            }),
            _ => Ok(Location::Sqlite(PathBuf::from(arg))),
        }
    }

    /// True for PostgreSQL.
    pub fn is_postgres(&self) -> bool {
        matches!(self, Location::Postgres(_))
    }

    /// What to put after `--db` in a command shown to the user: the path,
    /// or the URL with `PASSWORD` where its password was.
    pub fn for_command(&self) -> String {
        match self {
            Location::Sqlite(p) => shell_quote(&p.display().to_string()),
            Location::Postgres(u) => shell_quote(&u.placeholder),
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Sqlite(p) => write!(f, "{}", p.display()),
            Location::Postgres(u) => f.write_str(&u.shown),
        }
    }
}

impl fmt::Debug for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Debug for PgUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown)
    }
}

impl From<&Path> for Location {
    fn from(p: &Path) -> Location {
        Location::Sqlite(p.to_path_buf())
    }
}

impl From<&PathBuf> for Location {
    fn from(p: &PathBuf) -> Location {
        Location::Sqlite(p.clone())
    }
}

impl From<&Location> for Location {
    fn from(l: &Location) -> Location {
        l.clone()
    }
}

impl PgUrl {
    /// Checks `url` as the driver reads it (a malformed port, a parameter
    /// it does not know, no host), and builds the form without password.
    pub fn parse(url: &str) -> Result<PgUrl, BadUrl> {
        let (shown, placeholder) = (redact(url, None), redact(url, Some("PASSWORD")));
        let bad = |reason: String| BadUrl {
            shown: shown.clone(),
            reason,
        };
        let config: postgres::Config = url
            .parse()
            .map_err(|e: postgres::Error| bad(crate::pg_error::describe(&e)))?;
        if config.get_ssl_mode() == postgres::config::SslMode::Require {
            return Err(bad(
                "sslmode=require: stackmeter connects without TLS; reach the server through a TLS tunnel \
                 (stunnel, an SSH forward) or on a network you trust, with sslmode=prefer or disable"
                    .into(),
            ));
        }
        if config.get_hosts().is_empty() {
            return Err(bad(
                "no host (postgres://USER@HOST[:PORT]/DATABASE, or ?host=/socket/folder)".into(),
            ));
        }
        if config.get_dbname().is_none() {
            return Err(bad("no database name (postgres://USER@HOST[:PORT]/DATABASE)".into()));
        }
        Ok(PgUrl {
            url: url.to_string(),
            shown,
            placeholder,
        })
    }

    /// The URL without its password.
    pub fn shown(&self) -> &str {
        &self.shown
    }
}

/// The URL with its password replaced by `with` (`None`: left out). The
/// user part ends at the first `@` (as the driver reads it); a
/// `password=` parameter is the other place a password can be.
fn redact(url: &str, with: Option<&str>) -> String {
    let Some(scheme) = SCHEMES.iter().find(|p| url.starts_with(**p)) else {
        return url.to_string();
    };
    let rest = &url[scheme.len()..];
    let mut out = scheme.to_string();
    let rest = match rest.split_once('@') {
        Some((creds, tail)) => {
            match (creds.split_once(':'), with) {
                (Some((user, _)), Some(w)) => out.push_str(&format!("{user}:{w}")),
                (Some((user, _)), None) => out.push_str(user),
                (None, _) => out.push_str(creds),
            }
            out.push('@');
            tail
        }
        None => rest,
    };
    match rest.split_once('?') {
        Some((head, query)) => {
            out.push_str(head);
            let kept: Vec<String> = query
                .split('&')
                .filter_map(|kv| match (kv.split('=').next() == Some("password"), with) {
                    (false, _) => Some(kv.to_string()),
                    (true, Some(w)) => Some(format!("password={w}")),
                    (true, None) => None,
                })
                .collect();
            if !kept.is_empty() {
                out.push('?');
                out.push_str(&kept.join("&"));
            }
        }
        None => out.push_str(rest),
    }
    out
}

/// `s` as one shell word: bare when it holds only safe characters, else in
/// single quotes.
fn shell_quote(s: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "@%+=:,./_-".contains(c);
    if !s.is_empty() && s.chars().all(safe) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// Where the store lives when no `--db` is given: `$STACKMETER_DB` (a path
/// or a URL), else `$XDG_DATA_HOME/stackmeter/results.db`, else
/// `$HOME/.local/share/stackmeter/results.db`. `var` looks up one
/// environment variable (empty counts as unset).
pub fn default_location(var: impl Fn(&str) -> Option<String>) -> Option<Result<Location, BadUrl>> {
    let get = |k: &str| var(k).filter(|v| !v.is_empty());
    if let Some(p) = get("STACKMETER_DB") {
        return Some(Location::parse(OsStr::new(&p)));
    }
    Some(Ok(Location::Sqlite(data_dir(&var)?.join("results.db"))))
}

/// The spool's folder: `$XDG_DATA_HOME/stackmeter/spool`, else
/// `$HOME/.local/share/stackmeter/spool`.
pub fn default_spool_dir(var: impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
    Some(data_dir(&var)?.join("spool"))
}

/// stackmeter's folder in the user's data folder.
fn data_dir(var: &impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let get = |k: &str| var(k).filter(|v| !v.is_empty());
    let base = match get("XDG_DATA_HOME") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(get("HOME")?).join(".local/share"),
    };
    Some(base.join("stackmeter"))
}
