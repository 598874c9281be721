//! A heavy user's HOME for the machine view's benchmark (issue 22): tens of thousands of sessions of
//! the three agents that keep them, every one copied from a real capture in `tests/fixtures` with
//! fresh ids, each in a project of its own kind:
//!
//! - Claude Code (`~/.claude/projects/<project>/<id>.jsonl`): the three 2.1.332 sessions
//!   (`parallel`, `interrupt`, `subfail`). One in [`CLAUDE_FULL_EVERY`] whole, with its sub-agents and
//!   their sidecars (~500-700 KB); the rest only their first 8 to 12 lines (the prompt and what the
//!   CLI writes around it, 2-23 KB), as a session left after one question is.
//! - Codex (`~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`, the day its file was
//!   written): one in [`CODEX_MULTI_EVERY`] a whole swarm (`collab_v1`, `collab_v2`, `interrupt`,
//!   `tui_interrupt`, `exec`: a root and its children, 135-540 KB), the rest a single-thread rollout
//!   (`agents_md`, `tui_shell`: 41 and 98 KB, most of it the `session_meta`'s instructions).
//! - OpenCode (`~/.local/share/opencode/opencode.db`): root sessions with the rows a short
//!   `opencode run` writes, as `benches/opencode_store.rs` builds them (shapes from a real store).
//!
//! Every id the files carry (UUIDs, `msg_`/`req_`/`toolu_` ids, Claude agent ids) is moved by a
//! per-copy offset, so no two sessions share a thread, a message or a request; the cwd becomes the
//! copy's project. Each agent's sessions are spread evenly over the last [`SPREAD_DAYS`], the
//! first of each written now. Built from templates parsed once, so 50k sessions take seconds, not minutes.

use std::fmt::Write as _;
use std::fs;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
const SCHEMA: &str = include_str!("../../tests/support/opencode_schema.sql");

/// One Claude session in this many is whole (sub-agents and all).
pub const CLAUDE_FULL_EVERY: usize = 40;
/// One Codex session in this many is a swarm of several rollouts.
pub const CODEX_MULTI_EVERY: usize = 10;
/// The sessions' ages, newest to oldest.
pub const SPREAD_DAYS: u64 = 90;
/// Projects per agent the sessions are spread over.
pub const PROJECTS: usize = 200;

/// How many sessions of each agent.
#[derive(Debug, Clone, Copy)]
pub struct Mix {
    pub claude: usize,
    pub codex: usize,
    pub opencode: usize,
}

impl Mix {
    /// `total` sessions: 40 % Claude Code, 40 % Codex, 20 % OpenCode.
    pub fn of(total: usize) -> Self {
        let claude = total * 2 / 5;
        let codex = total * 2 / 5;
        Self { claude, codex, opencode: total - claude - codex }
    }
}

/// What was built.
pub struct Built {
    pub bytes: u64,
    pub files: usize,
    /// Files of the newest sessions, for a writer to append to: Claude transcripts and Codex root
    /// rollouts, with the session id each belongs to.
    pub newest: Vec<(PathBuf, Kind, String)>,
}

impl Built {
    /// What a HOME kept between runs remembers of its build (one line of figures, then a line a
    /// newest file: kind, id, path).
    pub fn to_text(&self) -> String {
        let mut out = format!("{} {}\n", self.bytes, self.files);
        for (path, kind, id) in &self.newest {
            let name = if *kind == Kind::Claude { "claude" } else { "codex" };
            let _ = writeln!(out, "{name}\t{id}\t{}", path.display());
        }
        out
    }

    pub fn parse(text: &str) -> Option<Self> {
        let mut lines = text.lines();
        let (bytes, files) = lines.next()?.split_once(' ')?;
        let mut built = Self { bytes: bytes.parse().ok()?, files: files.parse().ok()?, newest: Vec::new() };
        for line in lines {
            let mut parts = line.splitn(3, '\t');
            let kind = if parts.next()? == "claude" { Kind::Claude } else { Kind::Codex };
            let id = parts.next()?.to_owned();
            built.newest.push((PathBuf::from(parts.next()?), kind, id));
        }
        Some(built)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Claude,
    Codex,
}

/// Builds the HOME under `home`.
pub fn build(home: &Path, mix: Mix) -> Built {
    let now = SystemTime::now();
    // Each agent's sessions span the same days, the first of each written now.
    let age = |copy: usize, of: usize| {
        let spread = SPREAD_DAYS * 86_400 * 1000;
        Duration::from_millis(spread * copy as u64 / of.max(1) as u64)
    };
    let mut built = Built { bytes: 0, files: 0, newest: Vec::new() };
    let claude = ClaudeFixtures::load();
    for c in 0..mix.claude {
        claude.write(home, c, now - age(c, mix.claude), &mut built);
    }
    let codex = CodexFixtures::load();
    for x in 0..mix.codex {
        codex.write(home, x, now - age(x, mix.codex), &mut built);
    }
    if mix.opencode > 0 {
        built.bytes += opencode(home, mix.opencode, now);
        built.files += 1;
    }
    built
}

/// A piece of a template: text kept, or an id moved by the copy's offset.
enum Piece {
    Text(Vec<u8>),
    /// A lower-case UUID: its first 24 characters kept, the last 12 hex digits moved.
    Uuid {
        head: Vec<u8>,
        tail: u64,
    },
    /// `msg_…`, `req_…`, `toolu_…`: all but the last four base-62 digits kept.
    Base62 {
        head: Vec<u8>,
        tail: u64,
    },
    /// A Claude agent id: `a` and 16 hex digits.
    Agent {
        tail: u64,
    },
    /// The session's working directory.
    Cwd,
}

const BASE62: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// A fixture's text, parsed once into the pieces a copy rewrites.
struct Template(Vec<Piece>);

impl Template {
    fn parse(text: &[u8], cwd: &str) -> Self {
        let mut pieces = Vec::new();
        let mut lit = Vec::new();
        let mut i = 0;
        let flush = |lit: &mut Vec<u8>, pieces: &mut Vec<Piece>| {
            if !lit.is_empty() {
                pieces.push(Piece::Text(std::mem::take(lit)));
            }
        };
        while i < text.len() {
            let boundary = i == 0 || !text[i - 1].is_ascii_alphanumeric();
            if boundary && text[i..].starts_with(cwd.as_bytes()) {
                flush(&mut lit, &mut pieces);
                pieces.push(Piece::Cwd);
                i += cwd.len();
            } else if let Some(n) = boundary.then(|| uuid_at(text, i)).flatten() {
                flush(&mut lit, &mut pieces);
                let tail = u64::from_str_radix(std::str::from_utf8(&text[i + 24..i + n]).unwrap(), 16).unwrap();
                pieces.push(Piece::Uuid { head: text[i..i + 24].to_vec(), tail });
                i += n;
            } else if let Some(n) = boundary.then(|| base62_at(text, i)).flatten() {
                flush(&mut lit, &mut pieces);
                let tail = text[i + n - 4..i + n].iter().fold(0u64, |v, &c| v * 62 + digit62(c));
                pieces.push(Piece::Base62 { head: text[i..i + n - 4].to_vec(), tail });
                i += n;
            } else if let Some(n) = boundary.then(|| agent_at(text, i)).flatten() {
                flush(&mut lit, &mut pieces);
                let tail = u64::from_str_radix(std::str::from_utf8(&text[i + 1..i + n]).unwrap(), 16).unwrap();
                pieces.push(Piece::Agent { tail });
                i += n;
            } else {
                lit.push(text[i]);
                i += 1;
            }
        }
        flush(&mut lit, &mut pieces);
        Self(pieces)
    }

    /// The text of copy `copy`, in project `cwd`.
    fn write(&self, copy: u64, cwd: &str, out: &mut Vec<u8>) {
        use std::io::Write as _;
        for piece in &self.0 {
            match piece {
                Piece::Text(t) => out.extend_from_slice(t),
                Piece::Cwd => out.extend_from_slice(cwd.as_bytes()),
                Piece::Uuid { head, tail } => {
                    out.extend_from_slice(head);
                    let moved = tail.wrapping_add(copy.wrapping_mul(0x9e37_79b9_7f4b)) & ((1 << 48) - 1);
                    write!(out, "{moved:012x}").unwrap();
                }
                Piece::Base62 { head, tail } => {
                    out.extend_from_slice(head);
                    let moved = (tail + copy * 7_919) % 62u64.pow(4);
                    for k in (0..4).rev() {
                        out.push(BASE62[(moved / 62u64.pow(k) % 62) as usize]);
                    }
                }
                Piece::Agent { tail } => {
                    let moved = tail.wrapping_add(copy.wrapping_mul(0x9e37_79b9_7f4a_7c15));
                    write!(out, "a{moved:016x}").unwrap();
                }
            }
        }
    }

    fn text(&self, copy: u64, cwd: &str) -> Vec<u8> {
        let mut out = Vec::new();
        self.write(copy, cwd, &mut out);
        out
    }
}

fn uuid_at(text: &[u8], i: usize) -> Option<usize> {
    let s = text.get(i..i + 36)?;
    let ok = s.iter().enumerate().all(|(k, &c)| {
        if matches!(k, 8 | 13 | 18 | 23) { c == b'-' } else { c.is_ascii_digit() || (b'a'..=b'f').contains(&c) }
    });
    let after = text.get(i + 36).is_none_or(|c| !c.is_ascii_alphanumeric());
    (ok && after).then_some(36)
}

fn base62_at(text: &[u8], i: usize) -> Option<usize> {
    let rest = &text[i..];
    let prefix = [&b"msg_"[..], b"req_", b"toolu_"].into_iter().find(|p| rest.starts_with(p))?;
    let body = rest[prefix.len()..].iter().take_while(|c| c.is_ascii_alphanumeric()).count();
    (body >= 12).then_some(prefix.len() + body)
}

/// A Claude agent id (`a` and 16 hex digits, 2.1.332's shape).
fn agent_at(text: &[u8], i: usize) -> Option<usize> {
    let s = text.get(i..i + 17)?;
    let ok = s[0] == b'a' && s[1..].iter().all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c));
    let after = text.get(i + 17).is_none_or(|c| !c.is_ascii_alphanumeric());
    (ok && after).then_some(17)
}

fn digit62(c: u8) -> u64 {
    BASE62.iter().position(|&b| b == c).unwrap_or(0) as u64
}

/// A fixture file's bytes, gunzipped when its name ends in `.gz`.
fn read(path: &Path) -> Vec<u8> {
    let raw = fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    if path.extension().is_some_and(|e| e == "gz") {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&raw[..]).read_to_end(&mut out).unwrap();
        out
    } else {
        raw
    }
}

/// A file's name without `.gz`.
fn plain_name(path: &Path) -> String {
    let name = path.file_name().unwrap().to_str().unwrap();
    name.strip_suffix(".gz").unwrap_or(name).to_owned()
}

fn write_file(path: &Path, text: &[u8], modified: SystemTime, built: &mut Built) {
    let f = fs::File::create(path).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    std::io::Write::write_all(&mut &f, text).unwrap();
    f.set_modified(modified).unwrap();
    built.bytes += text.len() as u64;
    built.files += 1;
}

/// One Claude session fixture: the transcript (whole and as lines), its sub-agents' files.
struct ClaudeSession {
    id: Template,
    lines: Vec<Template>,
    /// `(name, text)` of each file under `<id>/subagents/`.
    subagents: Vec<(Template, Template)>,
}

struct ClaudeFixtures(Vec<ClaudeSession>);

const CLAUDE_CWD: &str = "/home/dev/demo-project";

impl ClaudeFixtures {
    fn load() -> Self {
        let sessions = ["parallel", "interrupt", "subfail"].iter().map(|name| {
            let dir = Path::new(FIXTURES).join("claude-2.1.332").join(name);
            let transcript = fs::read_dir(&dir)
                .unwrap()
                .map(|e| e.unwrap().path())
                .find(|p| p.is_file() && Path::new(&plain_name(p)).extension().is_some_and(|e| e == "jsonl"))
                .unwrap();
            let id = plain_name(&transcript).trim_end_matches(".jsonl").to_owned();
            let text = read(&transcript);
            let lines = text.split_inclusive(|&b| b == b'\n').map(|l| Template::parse(l, CLAUDE_CWD)).collect();
            let subagents = fs::read_dir(dir.join(&id).join("subagents"))
                .unwrap()
                .map(|e| e.unwrap().path())
                .map(|p| {
                    (Template::parse(plain_name(&p).as_bytes(), CLAUDE_CWD), Template::parse(&read(&p), CLAUDE_CWD))
                })
                .collect();
            ClaudeSession { id: Template::parse(id.as_bytes(), CLAUDE_CWD), lines, subagents }
        });
        Self(sessions.collect())
    }

    fn write(&self, home: &Path, copy: usize, modified: SystemTime, built: &mut Built) {
        let fixture = &self.0[copy % self.0.len()];
        let n = copy as u64 + 1;
        let project = format!("/home/dev/claude-p{}", copy % PROJECTS);
        let dir = home.join(".claude/projects").join(project.replace('/', "-"));
        fs::create_dir_all(&dir).unwrap();
        let id = String::from_utf8(fixture.id.text(n, &project)).unwrap();
        let whole = copy % CLAUDE_FULL_EVERY == 0;
        let keep = if whole { fixture.lines.len() } else { (8 + copy % 5).min(fixture.lines.len()) };
        let mut text = Vec::new();
        for line in &fixture.lines[..keep] {
            line.write(n, &project, &mut text);
        }
        let path = dir.join(format!("{id}.jsonl"));
        write_file(&path, &text, modified, built);
        if whole {
            let subagents = dir.join(&id).join("subagents");
            fs::create_dir_all(&subagents).unwrap();
            for (name, body) in &fixture.subagents {
                let name = String::from_utf8(name.text(n, &project)).unwrap();
                write_file(&subagents.join(name), &body.text(n, &project), modified, built);
            }
        }
        if built.newest.iter().filter(|(_, k, _)| *k == Kind::Claude).count() < NEWEST {
            built.newest.push((path, Kind::Claude, id));
        }
    }
}

/// Newest sessions of each agent handed back for the writer.
const NEWEST: usize = 50;

/// One Codex fixture: a session's rollouts (root first), with the cwd its files name.
struct CodexSession {
    /// `(name, text)` of each rollout; the root's first.
    rollouts: Vec<(Template, Template)>,
}

struct CodexFixtures {
    single: Vec<CodexSession>,
    multi: Vec<CodexSession>,
}

impl CodexFixtures {
    fn load() -> Self {
        let load = |name: &str| {
            let dir = Path::new(FIXTURES).join("codex-0.171.0/rollouts").join(name);
            let mut paths: Vec<PathBuf> = fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
            // The root's file is the one written first (its name's time and id sort first).
            paths.sort();
            let texts: Vec<Vec<u8>> = paths.iter().map(|p| read(p)).collect();
            let cwd = cwd_of(&texts[0]);
            let rollouts = paths
                .iter()
                .zip(&texts)
                .map(|(p, t)| (Template::parse(plain_name(p).as_bytes(), &cwd), Template::parse(t, &cwd)))
                .collect();
            CodexSession { rollouts }
        };
        Self {
            single: ["agents_md", "tui_shell"].into_iter().map(load).collect(),
            multi: ["collab_v1", "collab_v2", "interrupt", "tui_interrupt", "exec"].into_iter().map(load).collect(),
        }
    }

    fn write(&self, home: &Path, copy: usize, modified: SystemTime, built: &mut Built) {
        let fixture = if copy % CODEX_MULTI_EVERY == 0 {
            &self.multi[copy / CODEX_MULTI_EVERY % self.multi.len()]
        } else {
            &self.single[copy % self.single.len()]
        };
        let n = copy as u64 + 1;
        let project = format!("/home/dev/codex-p{}", copy % PROJECTS);
        // The day folder and the name's time are when the file was written, as Codex names them.
        let at = jiff::Timestamp::try_from(modified).unwrap();
        let day = home.join(".codex/sessions").join(at.strftime("%Y/%m/%d").to_string());
        fs::create_dir_all(&day).unwrap();
        let stamp = at.strftime("%Y-%m-%dT%H-%M-%S").to_string();
        for (k, (name, body)) in fixture.rollouts.iter().enumerate() {
            let name = String::from_utf8(name.text(n, &project)).unwrap();
            // `rollout-YYYY-MM-DDTHH-MM-SS-<id>.jsonl`: the time is the 19 characters after `rollout-`.
            let name = format!("rollout-{stamp}{}", &name["rollout-".len() + 19..]);
            let path = day.join(&name);
            write_file(&path, &body.text(n, &project), modified, built);
            if k == 0 && built.newest.iter().filter(|(_, k, _)| *k == Kind::Codex).count() < NEWEST {
                let id =
                    name[name.len() - "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx.jsonl".len()..name.len() - 6].to_owned();
                built.newest.push((path, Kind::Codex, id));
            }
        }
    }
}

/// The working directory a rollout's `session_meta` names.
fn cwd_of(text: &[u8]) -> String {
    let first = text.split(|&b| b == b'\n').next().unwrap();
    let meta: serde_json::Value = serde_json::from_slice(first).unwrap();
    meta["payload"]["cwd"].as_str().unwrap().to_owned()
}

/// The OpenCode store with `sessions` root sessions, their times spread like the files'; its size.
fn opencode(home: &Path, sessions: usize, now: SystemTime) -> u64 {
    let data = home.join(".local/share/opencode");
    fs::create_dir_all(&data).unwrap();
    let db = data.join("opencode.db");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch("PRAGMA foreign_keys = OFF; PRAGMA synchronous = OFF; PRAGMA journal_mode = WAL;").unwrap();
    conn.execute_batch(SCHEMA).unwrap();
    let now_ms = now.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_millis() as i64;
    let step = i64::try_from(SPREAD_DAYS * 86_400 * 1000).unwrap() / i64::try_from(sessions).unwrap();
    let permission = r#"[{"permission":"question","pattern":"*","action":"deny"},{"permission":"plan_enter","pattern":"*","action":"deny"},{"permission":"plan_exit","pattern":"*","action":"deny"}]"#;
    // Session i was last updated (i + 1) steps ago, created 23 s before that.
    let updated = format!("({now_ms} - (i + 1) * {step})");
    conn.execute_batch(&format!(
        "BEGIN;
         CREATE TEMP TABLE n(i INTEGER PRIMARY KEY);
         WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < {sessions}) INSERT INTO n SELECT i FROM c;
         INSERT INTO session (id, project_id, slug, directory, path, title, version, summary_additions, summary_deletions,
             summary_files, cost, tokens_input, tokens_output, tokens_reasoning, tokens_cache_read, tokens_cache_write,
             permission, agent, model, time_created, time_updated)
           SELECT printf('ses_%012xffeJkdkVwEPC5XYKY', 1000000000 - i), 'global', 'silent-squid',
             printf('/home/dev/opencode-p%d', i % {PROJECTS}), printf('home/dev/opencode-p%d', i % {PROJECTS}),
             printf('Session number %d', i), '1.18.33', 0, 0, 0, 0.003204, 997, 12, 0, 110, 0,
             '{permission}', 'build', '{{\"id\":\"mock-large\",\"providerID\":\"mock\",\"variant\":\"default\"}}',
             {updated} - 22831, {updated}
           FROM n;
         INSERT INTO message (id, session_id, time_created, time_updated, data)
           SELECT printf('msg_%012x1QIhz06CMGK33Ef', 2 * i), printf('ses_%012xffeJkdkVwEPC5XYKY', 1000000000 - i),
             {updated} - 22230, {updated} - 22230,
             printf('{{\"role\":\"user\",\"time\":{{\"created\":%d}},\"agent\":\"build\",\"model\":{{\"providerID\":\"mock\",\"modelID\":\"mock-large\"}},\"summary\":{{\"diffs\":[]}}}}', {updated} - 22230)
           FROM n;
         INSERT INTO message (id, session_id, time_created, time_updated, data)
           SELECT printf('msg_%012x1kLq7FYA39x6Qp', 2 * i + 1), printf('ses_%012xffeJkdkVwEPC5XYKY', 1000000000 - i),
             {updated} - 14516, {updated} - 852,
             printf('{{\"parentID\":\"msg_%012x1QIhz06CMGK33Ef\",\"role\":\"assistant\",\"mode\":\"build\",\"agent\":\"build\",\"path\":{{\"cwd\":\"/home/dev/opencode-p%d\",\"root\":\"/\"}},\"cost\":0.003204,\"tokens\":{{\"total\":1119,\"input\":997,\"output\":12,\"reasoning\":0,\"cache\":{{\"write\":0,\"read\":110}}}},\"modelID\":\"mock-large\",\"providerID\":\"mock\",\"time\":{{\"created\":%d,\"completed\":%d}},\"finish\":\"stop\"}}', 2 * i, i % {PROJECTS}, {updated} - 14516, {updated} - 852)
           FROM n;
         INSERT INTO part (id, message_id, session_id, time_created, time_updated, data)
           SELECT printf('prt_%012x1W01uId31hfO6FW', 4 * i), printf('msg_%012x1QIhz06CMGK33Ef', 2 * i),
             printf('ses_%012xffeJkdkVwEPC5XYKY', 1000000000 - i), {updated} - 22230, {updated} - 22230,
             '{{\"type\":\"text\",\"text\":\"Delegate the listing of the files in this directory, then report.\"}}'
           FROM n;
         INSERT INTO part (id, message_id, session_id, time_created, time_updated, data)
           SELECT printf('prt_%012x%s', 4 * i + k, suffix), printf('msg_%012x1kLq7FYA39x6Qp', 2 * i + 1),
             printf('ses_%012xffeJkdkVwEPC5XYKY', 1000000000 - i), {updated} - 14516 + k, {updated} - 14516 + k, data
           FROM n, (SELECT 1 AS k, 'l0Ox9n6FbHIxxF' AS suffix, '{{\"type\":\"step-start\"}}' AS data
                    UNION ALL SELECT 2, 'Ymaw8f5ra0qdRz', '{{\"type\":\"text\",\"text\":\"All sub-agents reported. The files are listed above.\",\"time\":{{\"start\":1796187340641,\"end\":1796187341317}}}}'
                    UNION ALL SELECT 3, 'gChkt4PKyqZ5tE', '{{\"reason\":\"stop\",\"type\":\"step-finish\",\"tokens\":{{\"total\":1119,\"input\":997,\"output\":12,\"reasoning\":0,\"cache\":{{\"write\":0,\"read\":110}}}},\"cost\":0.003204}}');
         COMMIT;
         PRAGMA wal_checkpoint(TRUNCATE);"
    ))
    .unwrap();
    drop(conn);
    fs::metadata(&db).map_or(0, |m| m.len())
}
