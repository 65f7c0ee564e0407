CREATE VIEW run_attributes AS
    SELECT run_id, key, value FROM run_attrs
    UNION ALL SELECT id, 'host', hostname FROM runs r
        WHERE NOT EXISTS (SELECT 1 FROM run_attrs a WHERE a.run_id = r.id AND a.key = 'host')
    UNION ALL SELECT id, 'kernel', kernel FROM runs r
        WHERE NOT EXISTS (SELECT 1 FROM run_attrs a WHERE a.run_id = r.id AND a.key = 'kernel')
    UNION ALL SELECT id, 'cpu', cpu_model FROM runs r
        WHERE NOT EXISTS (SELECT 1 FROM run_attrs a WHERE a.run_id = r.id AND a.key = 'cpu')
    UNION ALL SELECT id, 'version', tool_version FROM runs r
        WHERE NOT EXISTS (SELECT 1 FROM run_attrs a WHERE a.run_id = r.id AND a.key = 'version');

CREATE TABLE change_points (
    found       TEXT NOT NULL,             -- when `history --save` found it, UTC RFC 3339
    label       TEXT NOT NULL,
    test        TEXT NOT NULL,
    step        TEXT NOT NULL,
    row_label   TEXT NOT NULL,
    figure      TEXT NOT NULL,             -- 'rtt p50', 'total', ...
    unit        TEXT NOT NULL,
    run_id      INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE, -- the first run after the change
    before      REAL NOT NULL,             -- median before and after
    after       REAL NOT NULL,
    ratio       REAL NOT NULL,             -- after / before, with its 95% interval
    ratio_low   REAL NOT NULL,
    ratio_high  REAL NOT NULL,
    p_value     REAL NOT NULL,
    regression  INTEGER NOT NULL,          -- 1: worse, past the tolerance
    PRIMARY KEY (label, test, step, row_label, figure, run_id)
);

CREATE TABLE figures (
    test_id          INTEGER NOT NULL REFERENCES tests(id) ON DELETE CASCADE,
    row              INTEGER NOT NULL,
    row_label        TEXT NOT NULL,
    series           TEXT NOT NULL,
    stat             TEXT NOT NULL,
    unit             TEXT NOT NULL,
    value            REAL NOT NULL,
    lower_is_better  INTEGER NOT NULL,
    compared         INTEGER NOT NULL,
    PRIMARY KEY (test_id, row, series, stat)
);

CREATE TABLE histograms (
    test_id   INTEGER NOT NULL REFERENCES tests(id) ON DELETE CASCADE,
    row       INTEGER NOT NULL,
    metric    TEXT NOT NULL,               -- JSON key of the figure it backs: 'rtt_us', ...
    unit      TEXT NOT NULL,               -- unit of the recorded values: 'ns'
    encoding  TEXT NOT NULL,               -- 'hdrhistogram-v2'
    data      BLOB NOT NULL,
    PRIMARY KEY (test_id, row, metric)
);

CREATE TABLE intervals (
    test_id  INTEGER NOT NULL REFERENCES tests(id) ON DELETE CASCADE,
    row      INTEGER NOT NULL,
    series   TEXT NOT NULL,                -- 'total', 'sent', 'received', ...
    seq      INTEGER NOT NULL,
    start_s  REAL NOT NULL,                -- seconds from the test's start
    end_s    REAL NOT NULL,
    value    REAL NOT NULL,
    unit     TEXT NOT NULL,
    PRIMARY KEY (test_id, row, series, seq)
);

CREATE TABLE run_attrs (
    run_id  INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    key     TEXT NOT NULL,
    value   TEXT NOT NULL,
    PRIMARY KEY (run_id, key)
);

CREATE TABLE runs (
    id           INTEGER PRIMARY KEY,
    started      TEXT NOT NULL,            -- UTC, RFC 3339
    finished     TEXT,                     -- UTC, RFC 3339; NULL while running
    kind         TEXT NOT NULL,            -- 'single' (one measuring command) or 'suite'
    plan         TEXT,                     -- suite plan name or file
    status       TEXT NOT NULL,            -- 'running', 'complete', 'partial', 'failed'
    pid          INTEGER NOT NULL,         -- process that wrote it (tells a crash from a live run)
    tool_version TEXT NOT NULL,
    hostname     TEXT NOT NULL,
    kernel       TEXT NOT NULL,
    cpu_model    TEXT NOT NULL,
    cpus         INTEGER NOT NULL,
    command      TEXT NOT NULL,            -- JSON array of arguments
    settings     TEXT NOT NULL             -- JSON object: suite settings (repeat, quick, ...)
, uid TEXT);

CREATE TABLE tests (
    id             INTEGER PRIMARY KEY,
    run_id         INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq            INTEGER NOT NULL,       -- order within the run
    label          TEXT NOT NULL,
    repetition     INTEGER NOT NULL,       -- 0-based, per label and step
    step           TEXT NOT NULL,          -- plan step name ('' for a single command)
    test           TEXT NOT NULL,          -- 'rr', 'crr', 'ping', ...
    started        TEXT NOT NULL,
    target_name    TEXT NOT NULL,
    target_address TEXT NOT NULL,
    embedded       INTEGER NOT NULL,
    client_cpu     INTEGER,
    responder_cpu  INTEGER,
    complete       INTEGER NOT NULL,
    error          TEXT,
    params         TEXT NOT NULL,          -- JSON: the test's parameters
    document       TEXT NOT NULL           -- JSON: the whole stackmeter/1 document
, uid TEXT);

CREATE UNIQUE INDEX runs_by_uid ON runs(uid);

CREATE INDEX tests_by_label ON tests(label, test);

CREATE INDEX tests_by_run ON tests(run_id, seq);

CREATE UNIQUE INDEX tests_by_uid ON tests(uid);

