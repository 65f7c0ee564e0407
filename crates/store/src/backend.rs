//! The two databases behind one small interface: statements with `?N`
//! parameters in, rows of plain values out, transactions around them.
//! Every query of the store is written once against this; what differs
//! between SQLite and PostgreSQL is here and in `migrations.rs`, and nowhere
//! else: placeholders (`?N` becomes `$N`), how a write transaction starts
//! (`BEGIN IMMEDIATE` takes SQLite's write lock at once), and how values
//! are typed on the wire (PostgreSQL binds by the statement's parameter
//! types, so one `Value::Int` fills a BIGINT, an INTEGER or a DOUBLE).
//!
//! A PostgreSQL connection lives on a thread of its own that runs one
//! statement at a time for the store: the synchronous driver has no
//! timeout per statement, so the store waits for each answer with one
//! (`Pg::call`) and, past it, counts the connection as lost instead of
//! hanging on a server that stopped answering.

use crate::location::PgUrl;
use crate::pg_error::{describe, is_lost};
use crate::{Result, StoreError};
use postgres::types::{ToSql, Type};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::mpsc;
use std::time::Duration;

/// One value of a row or a parameter.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Value {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}

impl From<i64> for Value {
    fn from(v: i64) -> Value {
        Value::Int(v)
    }
}

impl From<usize> for Value {
    fn from(v: usize) -> Value {
        Value::Int(v as i64)
    }
}

impl From<u32> for Value {
    fn from(v: u32) -> Value {
        Value::Int(v as i64)
    }
}

impl From<bool> for Value {
    fn from(v: bool) -> Value {
        Value::Int(v as i64)
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Value {
        Value::Real(v)
    }
}

impl From<&str> for Value {
    fn from(v: &str) -> Value {
        Value::Text(v.to_string())
    }
}

impl From<String> for Value {
    fn from(v: String) -> Value {
        Value::Text(v)
    }
}

impl From<&String> for Value {
    fn from(v: &String) -> Value {
        Value::Text(v.clone())
    }
}

impl From<Vec<u8>> for Value {
    fn from(v: Vec<u8>) -> Value {
        Value::Blob(v)
    }
}

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Value {
        v.map_or(Value::Null, Into::into)
    }
}

/// Parameters, as `params![a, b, ...]`.
macro_rules! params {
    ($($v:expr),* $(,)?) => { vec![$($crate::backend::Value::from($v)),*] };
}
pub(crate) use params;

/// One row of a result.
#[derive(Clone, Debug)]
pub(crate) struct Row(pub(crate) Vec<Value>);

impl Row {
    fn at(&self, i: usize) -> Result<&Value> {
        self.0
            .get(i)
            .ok_or_else(|| StoreError::Corrupt(format!("query returned no column {i}")))
    }

    fn wrong(&self, i: usize, want: &str) -> StoreError {
        StoreError::Corrupt(format!("column {i} is {:?}, expected {want}", self.0.get(i)))
    }

    pub(crate) fn int(&self, i: usize) -> Result<i64> {
        self.opt_int(i)?.ok_or_else(|| self.wrong(i, "an integer"))
    }

    pub(crate) fn opt_int(&self, i: usize) -> Result<Option<i64>> {
        match self.at(i)? {
            Value::Int(v) => Ok(Some(*v)),
            Value::Null => Ok(None),
            _ => Err(self.wrong(i, "an integer")),
        }
    }

    pub(crate) fn real(&self, i: usize) -> Result<f64> {
        match self.at(i)? {
            Value::Real(v) => Ok(*v),
            Value::Int(v) => Ok(*v as f64),
            _ => Err(self.wrong(i, "a number")),
        }
    }

    pub(crate) fn text(&self, i: usize) -> Result<String> {
        self.opt_text(i)?.ok_or_else(|| self.wrong(i, "text"))
    }

    pub(crate) fn opt_text(&self, i: usize) -> Result<Option<String>> {
        match self.at(i)? {
            Value::Text(v) => Ok(Some(v.clone())),
            Value::Null => Ok(None),
            _ => Err(self.wrong(i, "text")),
        }
    }

    pub(crate) fn blob(&self, i: usize) -> Result<Vec<u8>> {
        match self.at(i)? {
            Value::Blob(v) => Ok(v.clone()),
            // SQLite keeps what it was given: a text in a BLOB column reads as text.
            Value::Text(v) => Ok(v.clone().into_bytes()),
            _ => Err(self.wrong(i, "bytes")),
        }
    }
}

/// An open database.
pub(crate) enum Conn {
    Sqlite(rusqlite::Connection),
    Postgres(Pg),
}

impl Conn {
    /// Runs one statement; the number of rows it changed.
    pub(crate) fn exec(&self, sql: &str, params: Vec<Value>) -> Result<u64> {
        match self {
            Conn::Sqlite(c) => {
                let mut st = c.prepare_cached(sql)?;
                Ok(st.execute(rusqlite::params_from_iter(params.iter()))? as u64)
            }
            Conn::Postgres(pg) => {
                let sql = sql.to_string();
                pg.call(move |w| {
                    let st = w.prepare(&sql)?;
                    let bound = bind(&params, st.params());
                    w.client.execute(&st, &refs(&bound))
                })
            }
        }
    }

    /// Runs one query; every row.
    pub(crate) fn query(&self, sql: &str, params: Vec<Value>) -> Result<Vec<Row>> {
        match self {
            Conn::Sqlite(c) => {
                let mut st = c.prepare_cached(sql)?;
                let n = st.column_count();
                let rows = st.query_map(rusqlite::params_from_iter(params.iter()), |r| {
                    (0..n)
                        .map(|i| r.get_ref(i).map(from_sqlite))
                        .collect::<rusqlite::Result<Vec<_>>>()
                })?;
                Ok(rows.map(|r| r.map(Row)).collect::<rusqlite::Result<Vec<_>>>()?)
            }
            Conn::Postgres(pg) => {
                let sql = sql.to_string();
                let rows = pg.call(move |w| {
                    let st = w.prepare(&sql)?;
                    let bound = bind(&params, st.params());
                    let rows = w.client.query(&st, &refs(&bound))?;
                    Ok(rows.iter().map(from_postgres).collect::<Vec<_>>())
                })?;
                rows.into_iter().collect()
            }
        }
    }

    /// The first row of a query, or `None`.
    pub(crate) fn query_opt(&self, sql: &str, params: Vec<Value>) -> Result<Option<Row>> {
        Ok(self.query(sql, params)?.into_iter().next())
    }

    /// The first row of a query, which must return one.
    pub(crate) fn query_row(&self, sql: &str, params: Vec<Value>) -> Result<Row> {
        self.query_opt(sql, params)?
            .ok_or_else(|| StoreError::Corrupt(format!("no row from: {sql}")))
    }

    /// Runs several statements without parameters (migrations).
    pub(crate) fn batch(&self, sql: &str) -> Result<()> {
        match self {
            Conn::Sqlite(c) => Ok(c.execute_batch(sql)?),
            Conn::Postgres(pg) => {
                let sql = sql.to_string();
                pg.call(move |w| w.client.batch_execute(&sql))
            }
        }
    }

    /// Runs `f` in a write transaction: committed when it returns `Ok`,
    /// rolled back otherwise. On SQLite the write lock is taken first (a
    /// second writer waits its busy timeout instead of failing when its
    /// read snapshot goes stale).
    pub(crate) fn transaction<T>(&self, f: impl FnOnce(&Conn) -> Result<T>) -> Result<T> {
        self.batch(match self {
            Conn::Sqlite(_) => "BEGIN IMMEDIATE",
            Conn::Postgres(_) => "BEGIN",
        })?;
        match f(self) {
            Ok(v) => {
                if let Err(e) = self.batch("COMMIT") {
                    let _ = self.batch("ROLLBACK");
                    return Err(e);
                }
                Ok(v)
            }
            Err(e) => {
                let _ = self.batch("ROLLBACK");
                Err(e)
            }
        }
    }

    /// The SQLite connection (tests).
    #[cfg(test)]
    pub(crate) fn sqlite(&self) -> &rusqlite::Connection {
        match self {
            Conn::Sqlite(c) => c,
            Conn::Postgres(_) => panic!("not an SQLite store"),
        }
    }
}

impl rusqlite::ToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, ValueRef};
        Ok(ToSqlOutput::Borrowed(match self {
            Value::Null => ValueRef::Null,
            Value::Int(v) => ValueRef::Integer(*v),
            Value::Real(v) => ValueRef::Real(*v),
            Value::Text(v) => ValueRef::Text(v.as_bytes()),
            Value::Blob(v) => ValueRef::Blob(v),
        }))
    }
}

fn from_sqlite(v: rusqlite::types::ValueRef<'_>) -> Value {
    use rusqlite::types::ValueRef;
    match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::Int(i),
        ValueRef::Real(f) => Value::Real(f),
        ValueRef::Text(t) => Value::Text(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => Value::Blob(b.to_vec()),
    }
}

/// `?N` placeholders as PostgreSQL writes them (`$N`). The store's SQL has
/// no `?` anywhere else.
pub(crate) fn dollar_params(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '?' && chars.peek().is_some_and(char::is_ascii_digit) {
            out.push('$');
        } else {
            out.push(c);
        }
    }
    out
}

/// Values typed as the statement's parameters are: an integer for a
/// BIGINT or an INTEGER parameter, a NULL of the parameter's own type.
fn bind(values: &[Value], types: &[Type]) -> Vec<Box<dyn ToSql + Sync>> {
    values
        .iter()
        .zip(types)
        .map(|(v, ty)| -> Box<dyn ToSql + Sync> {
            match (v, ty) {
                (Value::Int(i), t) if *t == Type::INT4 => Box::new(*i as i32),
                (Value::Int(i), t) if *t == Type::INT2 => Box::new(*i as i16),
                (Value::Int(i), t) if *t == Type::FLOAT8 => Box::new(*i as f64),
                (Value::Int(i), t) if *t == Type::BOOL => Box::new(*i != 0),
                (Value::Int(i), _) => Box::new(*i),
                (Value::Real(f), _) => Box::new(*f),
                (Value::Text(s), _) => Box::new(s.clone()),
                (Value::Blob(b), _) => Box::new(b.clone()),
                (Value::Null, t) if *t == Type::INT8 => Box::new(None::<i64>),
                (Value::Null, t) if *t == Type::INT4 => Box::new(None::<i32>),
                (Value::Null, t) if *t == Type::FLOAT8 => Box::new(None::<f64>),
                (Value::Null, t) if *t == Type::BYTEA => Box::new(None::<Vec<u8>>),
                (Value::Null, t) if *t == Type::BOOL => Box::new(None::<bool>),
                (Value::Null, _) => Box::new(None::<String>),
            }
        })
        .collect()
}

fn refs(b: &[Box<dyn ToSql + Sync>]) -> Vec<&(dyn ToSql + Sync)> {
    b.iter().map(std::convert::AsRef::as_ref).collect()
}

fn from_postgres(r: &postgres::Row) -> Result<Row> {
    let mut out = Vec::with_capacity(r.len());
    for (i, c) in r.columns().iter().enumerate() {
        let t = c.type_();
        let v = if *t == Type::INT8 {
            r.try_get::<_, Option<i64>>(i).map(|v| v.map(Value::Int))
        } else if *t == Type::INT4 {
            r.try_get::<_, Option<i32>>(i).map(|v| v.map(|v| Value::Int(v as i64)))
        } else if *t == Type::INT2 {
            r.try_get::<_, Option<i16>>(i).map(|v| v.map(|v| Value::Int(v as i64)))
        } else if *t == Type::BOOL {
            r.try_get::<_, Option<bool>>(i).map(|v| v.map(|v| Value::Int(v as i64)))
        } else if *t == Type::FLOAT8 {
            r.try_get::<_, Option<f64>>(i).map(|v| v.map(Value::Real))
        } else if *t == Type::FLOAT4 {
            r.try_get::<_, Option<f32>>(i).map(|v| v.map(|v| Value::Real(v as f64)))
        } else if *t == Type::BYTEA {
            r.try_get::<_, Option<Vec<u8>>>(i).map(|v| v.map(Value::Blob))
        } else if [Type::TEXT, Type::VARCHAR, Type::NAME, Type::BPCHAR].contains(t) {
            r.try_get::<_, Option<String>>(i).map(|v| v.map(Value::Text))
        } else {
            return Err(StoreError::Corrupt(format!(
                "column {} has type {t}, which the store does not read",
                c.name()
            )));
        };
        out.push(
            v.map_err(|e| StoreError::Corrupt(e.to_string()))?
                .unwrap_or(Value::Null),
        );
    }
    Ok(Row(out))
}

/// The thread that owns a PostgreSQL connection, and its prepared
/// statements (each statement of the store is parsed once per connection).
pub(crate) struct Worker {
    pub(crate) client: postgres::Client,
    cache: HashMap<String, postgres::Statement>,
}

impl Worker {
    fn prepare(&mut self, sql: &str) -> std::result::Result<postgres::Statement, postgres::Error> {
        if let Some(st) = self.cache.get(sql) {
            return Ok(st.clone());
        }
        let st = self.client.prepare(&dollar_params(sql))?;
        self.cache.insert(sql.to_string(), st.clone());
        Ok(st)
    }
}

type Job = Box<dyn FnOnce(&mut Worker) + Send>;

/// How long one statement may take before the connection counts as lost.
/// Generous: a store's statements take milliseconds; this only ends a wait
/// on a server that stopped answering.
pub(crate) const STATEMENT_TIMEOUT: Duration = Duration::from_secs(60);

/// How long connecting may take when the URL does not say
/// (`?connect_timeout=SECONDS`).
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A PostgreSQL connection on its own thread.
pub(crate) struct Pg {
    jobs: Option<mpsc::Sender<Job>>,
    /// Why the connection is gone, once it is: every later call fails at
    /// once with it.
    lost: RefCell<Option<String>>,
    /// The URL without password, for messages.
    pub(crate) shown: String,
}

impl Pg {
    /// Connects within the URL's `connect_timeout` (default 10 s) for the
    /// whole attempt: name lookup, TCP or Unix socket, startup and
    /// authentication. The connection keeps TCP keepalives and a TCP user
    /// timeout, so a peer that vanishes is noticed by the kernel too.
    pub(crate) fn connect(url: &PgUrl) -> Result<Pg> {
        let shown = url.shown().to_string();
        let mut config: postgres::Config = url.url.parse().map_err(|e: postgres::Error| {
            StoreError::BadUrl(crate::location::BadUrl {
                shown: shown.clone(),
                reason: e.to_string(),
            })
        })?;
        let limit = *config.get_connect_timeout().unwrap_or(&CONNECT_TIMEOUT);
        config.connect_timeout(limit);
        if config.get_tcp_user_timeout().is_none() {
            config.tcp_user_timeout(Duration::from_secs(30));
        }
        config.keepalives(true).keepalives_idle(Duration::from_secs(30));
        if config.get_application_name().is_none() {
            config.application_name("stackmeter");
        }
        let (ready_tx, ready_rx) = mpsc::sync_channel::<std::result::Result<(), postgres::Error>>(1);
        let (jobs, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("stackmeter-pg".into())
            .spawn(move || {
                let client = match config.connect(postgres::NoTls) {
                    Ok(c) => c,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                let _ = ready_tx.send(Ok(()));
                let mut w = Worker {
                    client,
                    cache: HashMap::new(),
                };
                while let Ok(job) = rx.recv() {
                    job(&mut w);
                }
            })
            .map_err(|e| StoreError::Unreachable {
                shown: shown.clone(),
                reason: format!("cannot start a thread: {e}"),
            })?;
        match ready_rx.recv_timeout(limit + Duration::from_secs(1)) {
            Ok(Ok(())) => Ok(Pg {
                jobs: Some(jobs),
                lost: RefCell::new(None),
                shown,
            }),
            Ok(Err(e)) => Err(connect_error(&shown, &e)),
            Err(_) => Err(StoreError::Unreachable {
                shown,
                reason: format!("no answer within {} s (connect_timeout)", limit.as_secs_f64()),
            }),
        }
    }

    /// Runs `f` on the connection's thread and waits for it, at most
    /// [`STATEMENT_TIMEOUT`].
    pub(crate) fn call<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Worker) -> std::result::Result<R, postgres::Error> + Send + 'static,
    ) -> Result<R> {
        self.call_within(STATEMENT_TIMEOUT, f)
    }

    /// As [`Pg::call`], waiting at most `limit`.
    pub(crate) fn call_within<R: Send + 'static>(
        &self,
        limit: Duration,
        f: impl FnOnce(&mut Worker) -> std::result::Result<R, postgres::Error> + Send + 'static,
    ) -> Result<R> {
        if let Some(why) = self.lost.borrow().clone() {
            return Err(StoreError::Unreachable {
                shown: self.shown.clone(),
                reason: why,
            });
        }
        let (tx, rx) = mpsc::sync_channel(1);
        let sent = self.jobs.as_ref().map(|j| {
            j.send(Box::new(move |w: &mut Worker| {
                let _ = tx.send(f(w));
            }))
        });
        let answer = match sent {
            Some(Ok(())) => rx.recv_timeout(limit),
            _ => Err(mpsc::RecvTimeoutError::Disconnected),
        };
        match answer {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) if is_lost(&e) => Err(self.lose(describe(&e))),
            Ok(Err(e)) => Err(StoreError::Postgres {
                shown: self.shown.clone(),
                reason: describe(&e),
            }),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                Err(self.lose(format!("no answer within {} s", limit.as_secs_f64())))
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(self.lose("the connection's thread ended".into())),
        }
    }

    fn lose(&self, why: String) -> StoreError {
        *self.lost.borrow_mut() = Some(why.clone());
        StoreError::Unreachable {
            shown: self.shown.clone(),
            reason: why,
        }
    }
}

impl Drop for Pg {
    fn drop(&mut self) {
        // Closing the channel ends the thread, which drops the client:
        // the connection closes and the server ends its session (and any
        // session locks it held).
        self.jobs.take();
    }
}

/// The error of a connection attempt: lost-kind errors say the server
/// cannot be reached, others that it refused (password, database name).
fn connect_error(shown: &str, e: &postgres::Error) -> StoreError {
    let reason = describe(e);
    if is_lost(e) {
        StoreError::Unreachable {
            shown: shown.to_string(),
            reason,
        }
    } else {
        StoreError::Refused {
            shown: shown.to_string(),
            reason,
        }
    }
}
