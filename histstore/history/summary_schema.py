"""The summary's tables (local/summary.sqlite; docs/format.md, "The summary").

Schema 2 held the sessions and the turns; schema 3 added the current turns
per project key, schema 4 the sessions and turns per agent and the sessions
per project key, each kept by triggers as rows come and go. A file of an
older schema gains what it lacks in place (histstore.history.summary).
"""

from __future__ import annotations

SCHEMA = "4"

BASE_DDL = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE session (
    session_id TEXT PRIMARY KEY,
    rev TEXT NOT NULL,
    project TEXT NOT NULL,
    pkey TEXT NOT NULL,
    agent TEXT NOT NULL,
    title TEXT,
    turns INTEGER NOT NULL
);
CREATE TABLE turn (
    session_id TEXT NOT NULL,
    turn_id TEXT NOT NULL,
    object TEXT NOT NULL,
    asked_at TEXT NOT NULL,
    project TEXT NOT NULL,
    pkey TEXT NOT NULL,
    subagent TEXT,
    own TEXT,
    PRIMARY KEY (session_id, turn_id)
) WITHOUT ROWID;
CREATE INDEX turn_time ON turn (asked_at, turn_id);
CREATE INDEX turn_id ON turn (turn_id);
CREATE INDEX turn_pkey ON turn (pkey, asked_at);
CREATE INDEX turn_project ON turn (project, asked_at);
"""
#: schema 3: current turns per project key, kept as turn rows come and go
PROJECT_DDL = """
CREATE TABLE project (pkey TEXT PRIMARY KEY, turns INTEGER NOT NULL) WITHOUT ROWID;
CREATE TRIGGER turn_added AFTER INSERT ON turn BEGIN
    INSERT INTO project VALUES (new.pkey, 1)
        ON CONFLICT (pkey) DO UPDATE SET turns = turns + 1;
END;
CREATE TRIGGER turn_removed AFTER DELETE ON turn BEGIN
    UPDATE project SET turns = turns - 1 WHERE pkey = old.pkey;
END;
"""
#: schema 4: sessions and turns per agent, sessions per project key, kept as
#: session rows come and go (a session row is only ever inserted, replaced
#: or deleted), so ``hs status`` counts without reading every session
TOTALS_DDL = """
CREATE TABLE agent (
    agent TEXT PRIMARY KEY, sessions INTEGER NOT NULL, turns INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE session_pkey (pkey TEXT PRIMARY KEY, sessions INTEGER NOT NULL) WITHOUT ROWID;
CREATE TRIGGER session_added AFTER INSERT ON session BEGIN
    INSERT INTO agent VALUES (new.agent, 1, new.turns)
        ON CONFLICT (agent) DO UPDATE SET sessions = sessions + 1, turns = turns + new.turns;
    INSERT INTO session_pkey VALUES (new.pkey, 1)
        ON CONFLICT (pkey) DO UPDATE SET sessions = sessions + 1;
END;
CREATE TRIGGER session_removed AFTER DELETE ON session BEGIN
    UPDATE agent SET sessions = sessions - 1, turns = turns - old.turns
        WHERE agent = old.agent;
    UPDATE session_pkey SET sessions = sessions - 1 WHERE pkey = old.pkey;
END;
"""
#: the counts of schema 4 made from the session table as it is
TOTALS_FILL = """
INSERT INTO agent SELECT agent, count(*), sum(turns) FROM session GROUP BY agent;
INSERT INTO session_pkey SELECT pkey, count(*) FROM session GROUP BY pkey;
"""
DDL = BASE_DDL + PROJECT_DDL + TOTALS_DDL

#: what a file of each older schema gains in place, in one transaction (a
#: rebuild at 1M turns takes a minute): what a half-made earlier try left
#: dropped, the tables and triggers made, counted once from what is there;
#: its schema is then the next one
UPGRADES = {
    "2": (
        "DROP TRIGGER IF EXISTS turn_added; DROP TRIGGER IF EXISTS turn_removed;"
        "DROP TABLE IF EXISTS project;"
        + PROJECT_DDL
        + "INSERT INTO project SELECT pkey, count(*) FROM turn GROUP BY pkey;"
    ),
    "3": (
        "DROP TRIGGER IF EXISTS session_added; DROP TRIGGER IF EXISTS session_removed;"
        "DROP TABLE IF EXISTS agent; DROP TABLE IF EXISTS session_pkey;" + TOTALS_DDL + TOTALS_FILL
    ),
}
TABLES = ("turn", "session", "meta", "project", "agent", "session_pkey")
