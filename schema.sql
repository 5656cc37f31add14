-- collab's one schema. Applied by internal/store with versioned migrations
-- (PRAGMA user_version): each "-- migrate N" section runs once, in order, in
-- one transaction. Never edit a released section; append a new one.
--
-- Repositories are named everywhere by their key: the path relative to
-- repos/ with ".git" (org/foo.git). Times are RFC 3339 UTC text, ids of
-- issues, patches, comments and reviews are lowercase hex.

-- migrate 1
CREATE TABLE settings (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
) STRICT;

CREATE TABLE repos (
  name        TEXT PRIMARY KEY,            -- org/foo.git
  public      INTEGER NOT NULL DEFAULT 0,
  description TEXT NOT NULL DEFAULT '',
  created_at  TEXT NOT NULL
) STRICT;

CREATE TABLE principals (
  name       TEXT PRIMARY KEY,
  disabled   INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL
) STRICT;

CREATE TABLE keys (
  fingerprint TEXT PRIMARY KEY,            -- SHA256:…
  principal   TEXT NOT NULL REFERENCES principals(name),
  type        TEXT NOT NULL,               -- ssh-ed25519
  blob        TEXT NOT NULL,               -- base64 of the wire key
  comment     TEXT NOT NULL DEFAULT '',
  created_at  TEXT NOT NULL
) STRICT;
CREATE INDEX keys_by_blob ON keys(type, blob);
CREATE INDEX keys_by_principal ON keys(principal);

CREATE TABLE grants (
  principal TEXT NOT NULL REFERENCES principals(name),
  repo      TEXT NOT NULL,                 -- a repository key, or '*'
  level     TEXT NOT NULL CHECK (level IN ('read', 'write', 'admin')),
  PRIMARY KEY (principal, repo)
) STRICT;

CREATE TABLE issues (
  seq        INTEGER PRIMARY KEY,          -- creation order, for pagination
  repo       TEXT NOT NULL,
  id         TEXT NOT NULL,
  title      TEXT NOT NULL,
  body       TEXT NOT NULL DEFAULT '',
  state      TEXT NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'closed')),
  author     TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  closed_at  TEXT,
  UNIQUE (repo, id)
) STRICT;
CREATE INDEX issues_by_state ON issues(repo, state, seq);
-- The web's "all states" list, newest first, without a sort of the whole repository.
CREATE INDEX issues_by_repo ON issues(repo, seq);
-- Text search of the web's issue lists: a trigram index of titles and
-- bodies, so "?q=" finds substrings without scanning every issue. Kept in
-- step with issues by triggers, so no writer needs to know about it.
CREATE VIRTUAL TABLE issues_fts USING fts5(title, body, content='issues', content_rowid='seq', tokenize='trigram');
CREATE TRIGGER issues_fts_insert AFTER INSERT ON issues BEGIN
  INSERT INTO issues_fts(rowid, title, body) VALUES (new.seq, new.title, new.body);
END;
CREATE TRIGGER issues_fts_delete AFTER DELETE ON issues BEGIN
  INSERT INTO issues_fts(issues_fts, rowid, title, body) VALUES ('delete', old.seq, old.title, old.body);
END;
CREATE TRIGGER issues_fts_update AFTER UPDATE OF title, body ON issues BEGIN
  INSERT INTO issues_fts(issues_fts, rowid, title, body) VALUES ('delete', old.seq, old.title, old.body);
  INSERT INTO issues_fts(rowid, title, body) VALUES (new.seq, new.title, new.body);
END;

CREATE TABLE comments (
  seq        INTEGER PRIMARY KEY,
  repo       TEXT NOT NULL,
  issue_id   TEXT NOT NULL,
  id         TEXT NOT NULL UNIQUE,
  author     TEXT NOT NULL,
  body       TEXT NOT NULL,
  created_at TEXT NOT NULL,
  FOREIGN KEY (repo, issue_id) REFERENCES issues(repo, id)
) STRICT;
CREATE INDEX comments_by_issue ON comments(repo, issue_id, seq);

-- Cross-repository references (REPO#PREFIX) found in bodies.
CREATE TABLE xrefs (
  src_repo   TEXT NOT NULL,
  src_kind   TEXT NOT NULL,                -- issue, comment, patch, review
  src_id     TEXT NOT NULL,
  dst_repo   TEXT NOT NULL,
  dst_prefix TEXT NOT NULL,
  PRIMARY KEY (src_repo, src_kind, src_id, dst_repo, dst_prefix)
) STRICT;
CREATE INDEX xrefs_by_dst ON xrefs(dst_repo, dst_prefix);

-- One row per (repo, issue) ever leased, never deleted: the token is the
-- high-water mark of tenures, so it can only rise. A free lease has a NULL
-- holder; a lease whose expires_at has passed is free too (expiry is a
-- filter, not a sweep).
CREATE TABLE leases (
  repo        TEXT NOT NULL,
  issue_id    TEXT NOT NULL,
  holder      TEXT,
  token       INTEGER NOT NULL,
  acquired_at TEXT NOT NULL,
  expires_at  TEXT,                         -- NULL: open-ended
  ttl_ms      INTEGER,                      -- last TTL asked for (renew's default); NULL: open-ended
  PRIMARY KEY (repo, issue_id)
) STRICT;

-- Append-only tenure history: one row per token handed out.
CREATE TABLE tenures (
  repo        TEXT NOT NULL,
  issue_id    TEXT NOT NULL,
  token       INTEGER NOT NULL,
  holder      TEXT NOT NULL,
  acquired_at TEXT NOT NULL,
  expires_at  TEXT,
  ended_at    TEXT,
  end_reason  TEXT CHECK (end_reason IN ('released', 'expired', 'merged')),
  PRIMARY KEY (repo, issue_id, token)
) STRICT;
CREATE INDEX tenures_open ON tenures(expires_at) WHERE ended_at IS NULL;

CREATE TABLE patches (
  seq         INTEGER PRIMARY KEY,
  repo        TEXT NOT NULL,
  id          TEXT NOT NULL,               -- the Patch: trailer value
  title       TEXT NOT NULL,
  description TEXT NOT NULL DEFAULT '',
  topic       TEXT NOT NULL DEFAULT '',
  draft       INTEGER NOT NULL DEFAULT 0,
  state       TEXT NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'merged', 'closed')),
  author      TEXT NOT NULL,
  base        TEXT NOT NULL,               -- target branch name, without refs/heads/
  created_at  TEXT NOT NULL,
  updated_at  TEXT NOT NULL,
  merged_branch TEXT,
  merged_commit TEXT,
  merged_by     TEXT,
  merged_at     TEXT,
  UNIQUE (repo, id)
) STRICT;
CREATE INDEX patches_by_state ON patches(repo, state, seq);
CREATE INDEX patches_open_base ON patches(repo, base) WHERE state = 'open';

CREATE TABLE revisions (
  repo        TEXT NOT NULL,
  patch_id    TEXT NOT NULL,
  number      INTEGER NOT NULL,
  commit_oid  TEXT NOT NULL,
  base_commit TEXT NOT NULL,
  pusher      TEXT NOT NULL,
  created_at  TEXT NOT NULL,
  PRIMARY KEY (repo, patch_id, number),
  UNIQUE (repo, patch_id, commit_oid),
  FOREIGN KEY (repo, patch_id) REFERENCES patches(repo, id)
) STRICT;
CREATE INDEX revisions_by_commit ON revisions(repo, commit_oid);

-- Issues a patch fixes (-o fixes=, Fixes: trailers).
CREATE TABLE patch_issues (
  repo     TEXT NOT NULL,
  patch_id TEXT NOT NULL,
  issue_id TEXT NOT NULL,
  PRIMARY KEY (repo, patch_id, issue_id)
) STRICT;
CREATE INDEX patch_issues_by_issue ON patch_issues(repo, issue_id);

CREATE TABLE reviews (
  seq        INTEGER PRIMARY KEY,
  repo       TEXT NOT NULL,
  patch_id   TEXT NOT NULL,
  id         TEXT NOT NULL UNIQUE,
  revision   INTEGER NOT NULL,
  author     TEXT NOT NULL,
  verdict    TEXT NOT NULL CHECK (verdict IN ('approve', 'request-changes', 'comment')),
  body       TEXT NOT NULL,
  file       TEXT,                         -- inline comment anchor
  line       INTEGER,
  created_at TEXT NOT NULL,
  FOREIGN KEY (repo, patch_id) REFERENCES patches(repo, id)
) STRICT;
CREATE INDEX reviews_by_patch ON reviews(repo, patch_id, seq);

-- Patch state changes (close, reopen) for the timeline.
CREATE TABLE patch_events (
  seq       INTEGER PRIMARY KEY,
  repo      TEXT NOT NULL,
  patch_id  TEXT NOT NULL,
  kind      TEXT NOT NULL,                 -- closed, reopened, merged
  actor     TEXT NOT NULL,
  at        TEXT NOT NULL
) STRICT;

-- The outbox: every change writes its event here in its own transaction.
CREATE TABLE events (
  id    INTEGER PRIMARY KEY AUTOINCREMENT,
  event TEXT NOT NULL,
  repo  TEXT NOT NULL,
  actor TEXT NOT NULL,
  at    TEXT NOT NULL,
  data  TEXT NOT NULL                      -- JSON object
) STRICT;
CREATE INDEX events_by_repo ON events(repo, id);

CREATE TABLE webhooks (
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  url        TEXT NOT NULL,
  repo       TEXT,                         -- NULL: every repository
  events     TEXT NOT NULL DEFAULT '',     -- comma-separated; '': every event
  cursor     INTEGER NOT NULL,             -- last event id handled
  created_at TEXT NOT NULL,
  removed_at TEXT
) STRICT;

-- One row per (subscription, event) once its delivery is attempted.
CREATE TABLE deliveries (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  webhook_id  INTEGER NOT NULL REFERENCES webhooks(id),
  event_id    INTEGER NOT NULL REFERENCES events(id),
  state       TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
  attempts    INTEGER NOT NULL DEFAULT 0,
  next_at     TEXT,
  created_at  TEXT NOT NULL,
  started_at  TEXT NOT NULL,               -- retries stop 24 h after this (the event's time, or a redelivery's)
  UNIQUE (webhook_id, event_id)
) STRICT;
CREATE INDEX deliveries_pending ON deliveries(state, next_at);
-- The dispatcher's work list: a subscription's pending deliveries in event order.
CREATE INDEX deliveries_pending_by_hook ON deliveries(webhook_id, event_id) WHERE state = 'pending';
-- Pruning finished deliveries past the retention period, oldest first.
CREATE INDEX deliveries_finished ON deliveries(started_at) WHERE state != 'pending';

CREATE TABLE delivery_attempts (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  delivery_id INTEGER NOT NULL REFERENCES deliveries(id),
  at          TEXT NOT NULL,
  status      INTEGER,                      -- HTTP status, NULL on transport error
  duration_ms INTEGER NOT NULL,
  error       TEXT NOT NULL DEFAULT ''
) STRICT;
CREATE INDEX attempts_by_delivery ON delivery_attempts(delivery_id);

-- Bearer tokens for the HTTP API and web login; only the SHA-256 is kept.
CREATE TABLE tokens (
  id           INTEGER PRIMARY KEY,
  principal    TEXT NOT NULL REFERENCES principals(name),
  name         TEXT NOT NULL,
  hash         TEXT NOT NULL UNIQUE,
  created_at   TEXT NOT NULL,
  last_used_at TEXT,
  UNIQUE (principal, name)
) STRICT;

CREATE TABLE sessions (
  hash       TEXT PRIMARY KEY,             -- SHA-256 of the cookie value
  principal  TEXT NOT NULL,
  csrf       TEXT NOT NULL,
  token_id   INTEGER,                      -- the token signed in with; revoking it ends the session
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL
) STRICT;

-- migrate 2
-- The merge scan's progress: per branch, the tip whose history the scan
-- last completed. The next push to the branch (or collab-web's sweep)
-- scans from there, so a scan a killed post-receive missed is made up.
CREATE TABLE branch_scans (
  repo       TEXT NOT NULL,
  branch     TEXT NOT NULL,
  tip        TEXT NOT NULL,
  scanned_at TEXT NOT NULL,
  PRIMARY KEY (repo, branch)
) STRICT;

-- migrate 3
-- Each principal's write budget, a token bucket (CONTRACT.md "Exit codes"):
-- taken in the write's own transaction, so a refused or failed write
-- spends nothing. The size and refill rate are the settings rate_burst and
-- rate_refill.
CREATE TABLE rate_buckets (
  principal  TEXT PRIMARY KEY,
  tokens     REAL NOT NULL,
  updated_at TEXT NOT NULL
) STRICT;

-- migrate 4
-- Branch rules (CONTRACT.md "Protected branches, submit and checks"): a
-- protected branch moves only through patch submit, except a repository
-- admin's fast-forward where direct_push is 'admin'. A rule may name a
-- branch that does not exist yet; it waits for it.
CREATE TABLE branch_rules (
  repo        TEXT NOT NULL,
  branch      TEXT NOT NULL,               -- without refs/heads/
  approvals   INTEGER NOT NULL DEFAULT 1 CHECK (approvals >= 0),
  checks      TEXT NOT NULL DEFAULT '[]',  -- JSON array of required check names
  strategy    TEXT NOT NULL DEFAULT 'merge' CHECK (strategy IN ('merge', 'ff-only', 'rebase', 'squash')),
  direct_push TEXT NOT NULL DEFAULT 'none' CHECK (direct_push IN ('none', 'admin')),
  created_by  TEXT NOT NULL,
  created_at  TEXT NOT NULL,
  updated_at  TEXT NOT NULL,
  PRIMARY KEY (repo, branch)
) STRICT;

-- Check results on revisions: the latest state per (revision, name); the
-- history is in the events (check.updated).
CREATE TABLE checks (
  repo       TEXT NOT NULL,
  patch_id   TEXT NOT NULL,
  revision   INTEGER NOT NULL,
  name       TEXT NOT NULL,
  state      TEXT NOT NULL CHECK (state IN ('pending', 'running', 'success', 'failure', 'error', 'skipped')),
  url        TEXT NOT NULL DEFAULT '',
  summary    TEXT NOT NULL DEFAULT '',
  by         TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (repo, patch_id, revision, name),
  FOREIGN KEY (repo, patch_id) REFERENCES patches(repo, id)
) STRICT;

-- How a merge was made: 'push' for the merge scan, else the submit's
-- strategy; submitted is 1 when the forge made it (patch submit).
ALTER TABLE patches ADD COLUMN merged_strategy TEXT;
ALTER TABLE patches ADD COLUMN merged_submitted INTEGER NOT NULL DEFAULT 0;

-- migrate 5
-- Labels on issues (issue label, issue list --label), and the agents' work
-- queue (lease acquire --next --label): "the oldest open issue carrying
-- every given label" walks issue_labels_open of the first label in age
-- order and probes the primary key for the others. seq is the issue's
-- issues.seq (its age; its row by rowid). open mirrors the issue's state,
-- kept in step by a trigger as issues_fts is, so that no writer of issues
-- needs to know about labels and the open issues of a label are one index
-- range even when thousands of closed issues keep the label.
CREATE TABLE issue_labels (
  repo  TEXT NOT NULL,
  label TEXT NOT NULL,
  seq   INTEGER NOT NULL,                  -- issues.seq of the issue
  open  INTEGER NOT NULL,                  -- 1 while the issue is open
  PRIMARY KEY (repo, label, seq)
) STRICT, WITHOUT ROWID;
CREATE INDEX issue_labels_open ON issue_labels(repo, label, seq) WHERE open = 1;
-- The labels of one issue, in order.
CREATE INDEX issue_labels_by_issue ON issue_labels(seq, label);
CREATE TRIGGER issue_labels_state AFTER UPDATE OF state ON issues BEGIN
  UPDATE issue_labels SET open = (new.state = 'open') WHERE seq = new.seq AND open != (new.state = 'open');
END;

-- migrate 6
-- What Gerrit's push options say of a patch (refs/for/BASE%r=NAME,t=TAG,m=MSG
-- or the same with -o): the principals asked to review it (r=, cc=), its
-- hashtags, and per revision the message its push carried (m=).
CREATE TABLE patch_reviewers (
  repo     TEXT NOT NULL,
  patch_id TEXT NOT NULL,
  name     TEXT NOT NULL,
  added_by TEXT NOT NULL,
  added_at TEXT NOT NULL,
  PRIMARY KEY (repo, patch_id, name)
) STRICT;
CREATE INDEX patch_reviewers_by_name ON patch_reviewers(repo, name);

CREATE TABLE patch_hashtags (
  repo     TEXT NOT NULL,
  patch_id TEXT NOT NULL,
  tag      TEXT NOT NULL,
  PRIMARY KEY (repo, patch_id, tag)
) STRICT;

ALTER TABLE revisions ADD COLUMN message TEXT NOT NULL DEFAULT '';

-- migrate 7
-- A principal's e-mail address, so Gerrit users can name reviewers the way
-- they type them (r=alice@example.com). Stored lowercased; one principal
-- each.
ALTER TABLE principals ADD COLUMN email TEXT;
CREATE UNIQUE INDEX principals_by_email ON principals(email) WHERE email IS NOT NULL;

-- migrate 8
-- Who added a subscription: NULL for the operator's (collab-hook webhook
-- add, any address), a principal for a repository admin's (SSH verb, API),
-- whose URL may not reach loopback, private, link-local or metadata
-- addresses unless the operator allows a range (setting webhook_allow).
ALTER TABLE webhooks ADD COLUMN added_by TEXT;

-- migrate 9
-- lease acquire --next --request KEY (HTTP: Idempotency-Key): the key a
-- tenure was claimed with, and what it asked (repository, labels, TTL), so
-- that a retry whose first answer was lost gets that tenure back while it
-- is live, and the same key with other arguments is refused. Kept on the
-- tenure (an append-only history already) so that a keyed claim writes no
-- other row.
ALTER TABLE tenures ADD COLUMN request TEXT;
ALTER TABLE tenures ADD COLUMN request_args TEXT;
CREATE INDEX tenures_by_request ON tenures(holder, request) WHERE request IS NOT NULL;

-- A move of a patch to another base (-o base=move) makes a new revision
-- even of a commit that already is one, so that the votes of the old base
-- stay with its revisions: a commit may now be more than one revision of
-- a patch. SQLite drops a UNIQUE constraint only by copying the table.
CREATE TABLE revisions_moved (
  repo        TEXT NOT NULL,
  patch_id    TEXT NOT NULL,
  number      INTEGER NOT NULL,
  commit_oid  TEXT NOT NULL,
  base_commit TEXT NOT NULL,
  pusher      TEXT NOT NULL,
  created_at  TEXT NOT NULL,
  message     TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (repo, patch_id, number),
  FOREIGN KEY (repo, patch_id) REFERENCES patches(repo, id)
) STRICT;
INSERT INTO revisions_moved(repo, patch_id, number, commit_oid, base_commit, pusher, created_at, message)
  SELECT repo, patch_id, number, commit_oid, base_commit, pusher, created_at, message FROM revisions;
DROP TABLE revisions;
ALTER TABLE revisions_moved RENAME TO revisions;
CREATE INDEX revisions_by_commit ON revisions(repo, commit_oid);
CREATE INDEX revisions_by_patch_commit ON revisions(repo, patch_id, commit_oid);

-- migrate 10
-- Completion is fenced (CONTRACT.md "Fencing"): an admin's --force
-- takeover ends the holder's tenure as overridden, and says who did it
-- (ended_by; NULL for every other end, whose actor is the holder, the
-- clock or the merge's event); a merge record says whether the merged
-- commit's content is that of one of the patch's revisions
-- (merged_content: 'same' or 'differs'; NULL, from before, reads 'same').
-- SQLite cannot change a CHECK constraint in place: the table is copied.
CREATE TABLE tenures_fenced (
  repo        TEXT NOT NULL,
  issue_id    TEXT NOT NULL,
  token       INTEGER NOT NULL,
  holder      TEXT NOT NULL,
  acquired_at TEXT NOT NULL,
  expires_at  TEXT,
  ended_at    TEXT,
  end_reason  TEXT CHECK (end_reason IN ('released', 'expired', 'merged', 'overridden')),
  request      TEXT,
  request_args TEXT,
  ended_by    TEXT,
  PRIMARY KEY (repo, issue_id, token)
) STRICT;
INSERT INTO tenures_fenced(repo, issue_id, token, holder, acquired_at, expires_at, ended_at, end_reason, request, request_args)
  SELECT repo, issue_id, token, holder, acquired_at, expires_at, ended_at, end_reason, request, request_args FROM tenures;
DROP TABLE tenures;
ALTER TABLE tenures_fenced RENAME TO tenures;
CREATE INDEX tenures_open ON tenures(expires_at) WHERE ended_at IS NULL;
CREATE INDEX tenures_by_request ON tenures(holder, request) WHERE request IS NOT NULL;

ALTER TABLE patches ADD COLUMN merged_content TEXT CHECK (merged_content IN ('same', 'differs'));

-- migrate 11
-- Tokens with a lifetime (token new --ttl, settings token_ttl_default and
-- token_ttl_max): NULL never expires. An expired token is answered like a
-- revoked one; a web session made from it ends when it does.
ALTER TABLE tokens ADD COLUMN expires_at TEXT;

-- migrate 12
-- Stacks (CONTRACT.md "Pushing"): a revision made from a commit whose
-- parent commit is another patch's revision in the same push records that
-- patch as its parent; a patch's parents and children are those of its
-- latest revision. '' is no parent.
ALTER TABLE revisions ADD COLUMN parent_patch TEXT NOT NULL DEFAULT '';
CREATE INDEX revisions_by_parent ON revisions(repo, parent_patch) WHERE parent_patch != '';
-- merge.commit is the commit that brought the patch onto the branch (what
-- patch submit prints); merged_tip is what the push or submit moved the
-- branch to (a submit's merge commit), NULL where unknown.
ALTER TABLE patches ADD COLUMN merged_tip TEXT;

-- migrate 13
-- Review threads and drafts (CONTRACT.md "JSON shapes", review): an inline
-- comment's side ('old' anchors to the line of the revision's base), its
-- thread (the first comment's id, on every comment of the thread, the
-- first one included), whether the thread is resolved (kept on its first
-- comment, with who did it), and drafts, which only their author sees
-- until patch publish posts them.
ALTER TABLE reviews ADD COLUMN side TEXT CHECK (side IN ('old', 'new'));
ALTER TABLE reviews ADD COLUMN thread TEXT;
ALTER TABLE reviews ADD COLUMN resolved INTEGER NOT NULL DEFAULT 0;
ALTER TABLE reviews ADD COLUMN resolved_by TEXT;
ALTER TABLE reviews ADD COLUMN draft INTEGER NOT NULL DEFAULT 0;
CREATE INDEX reviews_drafts ON reviews(repo, patch_id, author) WHERE draft = 1;
-- A patch's title and description follow its latest revision's commit
-- message until someone sets them (-o title=, patch edit): titled = 1.
ALTER TABLE patches ADD COLUMN titled INTEGER NOT NULL DEFAULT 0;
-- branch protect --resolved: submit needs every inline thread resolved.
ALTER TABLE branch_rules ADD COLUMN resolved INTEGER NOT NULL DEFAULT 0;
UPDATE reviews SET thread = id, side = 'new' WHERE file IS NOT NULL;

-- migrate 14
-- On behalf of (CONTRACT.md "Writes may carry --on-behalf-of"): a grant's
-- delegate capability (never implied by admin; granting it raises the
-- level to at least write), and on each written record the person an
-- actor acted for and how the request reached it (NULL: the actor's own).
ALTER TABLE grants ADD COLUMN delegate INTEGER NOT NULL DEFAULT 0;
ALTER TABLE issues ADD COLUMN on_behalf_of TEXT;
ALTER TABLE issues ADD COLUMN via TEXT;
ALTER TABLE comments ADD COLUMN on_behalf_of TEXT;
ALTER TABLE comments ADD COLUMN via TEXT;
ALTER TABLE reviews ADD COLUMN on_behalf_of TEXT;
ALTER TABLE reviews ADD COLUMN via TEXT;
ALTER TABLE events ADD COLUMN on_behalf_of TEXT;
ALTER TABLE events ADD COLUMN via TEXT;

-- migrate 15
-- References that resolve (CONTRACT.md "issue link"): a reference is
-- resolved when it is written, to the one issue or patch its prefix then
-- named among those its author could read (dst_kind, dst_id; NULL: it
-- named none or several, and stays text). A prefix that named one id once
-- names it for ever among the ids it may name later, so every resolved
-- row of one (dst_repo, dst_prefix) agrees.
ALTER TABLE xrefs ADD COLUMN dst_kind TEXT CHECK (dst_kind IN ('issue', 'patch'));
ALTER TABLE xrefs ADD COLUMN dst_id TEXT;
CREATE INDEX xrefs_by_dst_id ON xrefs(dst_repo, dst_id) WHERE dst_id IS NOT NULL;
-- Explicit links between issues (issue link): repo/issue_id blocks or
-- relates to dst_repo/dst_id; one link per pair, in one direction.
CREATE TABLE issue_links (
  repo       TEXT NOT NULL,
  issue_id   TEXT NOT NULL,
  dst_repo   TEXT NOT NULL,
  dst_id     TEXT NOT NULL,
  kind       TEXT NOT NULL CHECK (kind IN ('relates', 'blocks')),
  created_by TEXT NOT NULL,
  created_at TEXT NOT NULL,
  PRIMARY KEY (repo, issue_id, dst_repo, dst_id)
) STRICT;
CREATE INDEX issue_links_by_dst ON issue_links(dst_repo, dst_id);
