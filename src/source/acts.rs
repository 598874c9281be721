//! swarmtop's own log of the acts it did outside a tee (`$XDG_STATE_HOME/swarmtop/acts.ndjson`,
//! written by `act::log`): an abort through an agent's server, a signal. A tee's recording holds
//! its acts as envelopes with an `act` (recording.md), and the tree says of their target why it
//! stopped; this log is the same account for a session a server carries, so the sources that
//! read a server or its store hand its stops on as such envelopes, after the sessions they name.
//!
//! Only stops that took are handed on (`outcome` `aborted`): a failed abort stopped nothing. The
//! log is read from its last [`MAX_READ`] bytes at most, and a line over [`MAX_LINE`] is skipped.

use std::fs::File;
use std::io::{self, Read as _, Seek as _, SeekFrom};
use std::path::PathBuf;

use serde::Deserialize;
use serde_json::{Map, Value, json};

/// Bytes of the log read at most, the newest: older acts are of sessions long gone.
pub const MAX_READ: u64 = 4 << 20;
/// A longer line is no act swarmtop wrote: skipped.
pub const MAX_LINE: usize = 64 << 10;

/// Where the log is: beside the recordings.
pub fn path() -> io::Result<PathBuf> {
    let recordings = super::recording::default_dir()?;
    Ok(recordings.parent().map_or_else(|| recordings.clone(), std::path::Path::to_path_buf).join("acts.ndjson"))
}

/// One logged act, as far as a reader needs it.
#[derive(Debug, Clone, Deserialize)]
pub struct Logged {
    #[serde(default)]
    pub ts: Option<i64>,
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub by: Option<String>,
    #[serde(default)]
    pub via: Option<String>,
    /// The server it went through (`HOST:PORT`), when it went through one.
    #[serde(default)]
    pub server: Option<String>,
    pub target: String,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub outcome: Option<String>,
    /// The call a refusal refused (its id): the lane shows the refusal under it.
    #[serde(default)]
    pub call: Option<String>,
}

impl Logged {
    /// Whether it stopped its target: an abort the server confirmed.
    pub fn took(&self) -> bool {
        self.outcome.as_deref().is_some_and(|o| o.eq_ignore_ascii_case("aborted"))
    }

    /// Whether it went through the server at `authority` (`HOST:PORT`). The log names a server as
    /// the act reached it: the census finds one as `127.0.0.1:N` or `[::1]:N`, the user may name it
    /// `localhost:N`; on one machine those are the same server (issue 23), so loopback hosts are
    /// one host here. Other hosts match only as written (case aside).
    pub fn through(&self, authority: &str) -> bool {
        self.server.as_deref().is_some_and(|s| same_server(s, authority))
    }

    /// The act as a record: an envelope whose `act` says who stopped the target and why, around a
    /// swarmtop marker (the line is swarmtop's, not the agent's).
    pub fn record(&self, out: &mut Vec<u8>) {
        let mut act = Map::new();
        for (k, v) in [("kind", &self.kind), ("by", &self.by), ("via", &self.via), ("server", &self.server)] {
            if let Some(v) = v {
                act.insert(k.into(), v.as_str().into());
            }
        }
        act.insert("target".into(), self.target.as_str().into());
        for (k, v) in [("reason", &self.reason), ("call", &self.call)] {
            if let Some(v) = v {
                act.insert(k.into(), v.as_str().into());
            }
        }
        let mut envelope = json!({"dir": "in", "act": Value::Object(act), "msg": {"swarmtop": "act"}});
        if let Some(ts) = self.ts {
            envelope["ts"] = ts.into();
        }
        // serde_json writes no raw newline: one value is one line.
        out.extend_from_slice(envelope.to_string().as_bytes());
        out.push(b'\n');
    }
}

/// Whether two `HOST:PORT` authorities name one server: the same text, or the same port on
/// loopback (`localhost`, `127.0.0.0/8`, `[::1]`, a v4-mapped `[::ffff:127.x.y.z]`, and the
/// unspecified `0.0.0.0` / `[::]` a server listening everywhere is reached at). A missing port is
/// HTTP's 80.
pub fn same_server(a: &str, b: &str) -> bool {
    if a.eq_ignore_ascii_case(b) {
        return true;
    }
    let (Some((host_a, port_a)), Some((host_b, port_b))) = (split_authority(a), split_authority(b)) else {
        return false;
    };
    port_a == port_b && (host_a.eq_ignore_ascii_case(host_b) || (is_loopback(host_a) && is_loopback(host_b)))
}

/// `HOST:PORT` as its host (brackets of an IPv6 address left out) and port.
fn split_authority(authority: &str) -> Option<(&str, u16)> {
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        (host, after.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    let port = port.map_or(Some(80), |p| p.parse().ok())?;
    (!host.is_empty()).then_some((host, port))
}

fn is_loopback(host: &str) -> bool {
    let host = host.strip_suffix('.').unwrap_or(host);
    if host.eq_ignore_ascii_case("localhost") {
        return true;
    }
    match host.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(ip)) => ip.is_loopback() || ip.is_unspecified(),
        Ok(std::net::IpAddr::V6(ip)) => {
            ip.is_loopback() || ip.is_unspecified() || ip.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
        Err(_) => false,
    }
}

/// The stops the log holds, oldest first (its last [`MAX_READ`] bytes); none when there is no log.
pub fn read() -> Vec<Logged> {
    let mut tail = Tail::new();
    tail.poll()
}

/// The records of the stops among `acts` that `keep` keeps, in the log's order.
pub fn records(acts: &[Logged], keep: impl Fn(&Logged) -> bool) -> Vec<u8> {
    let mut out = Vec::new();
    for a in acts.iter().filter(|a| keep(a)) {
        a.record(&mut out);
    }
    out
}

/// The log followed: each [`Tail::poll`] gives the stops written since the last.
#[derive(Debug)]
pub struct Tail {
    path: Option<PathBuf>,
    /// Where the next read starts.
    offset: u64,
    /// The start of a line not yet ended.
    partial: Vec<u8>,
    /// The next line is the rest of one started before the read began, or one over the bound.
    skipping: bool,
}

impl Default for Tail {
    fn default() -> Self {
        Self::new()
    }
}

impl Tail {
    /// From the log's start (its last [`MAX_READ`] bytes).
    pub fn new() -> Self {
        Self { path: path().ok(), offset: 0, partial: Vec::new(), skipping: false }
    }

    /// From the log's end: only acts written from now on.
    pub fn from_end() -> Self {
        let mut t = Self::new();
        t.offset = t.path.as_ref().and_then(|p| std::fs::metadata(p).ok()).map_or(0, |m| m.len());
        t
    }

    /// [`Tail::from_end`] of the log at `path` (tests: the user's own log is not theirs to read).
    pub fn from_end_of(path: &std::path::Path) -> Self {
        let offset = std::fs::metadata(path).map_or(0, |m| m.len());
        Self { path: Some(path.to_owned()), offset, partial: Vec::new(), skipping: false }
    }

    /// The stops written since the last poll (up to [`MAX_READ`] bytes of them).
    pub fn poll(&mut self) -> Vec<Logged> {
        let Some(path) = &self.path else { return Vec::new() };
        let Ok(mut file) = File::open(path) else { return Vec::new() };
        let len = file.metadata().map_or(0, |m| m.len());
        if len < self.offset {
            // Cut short or replaced: read it anew.
            (self.offset, self.skipping) = (0, false);
            self.partial.clear();
        }
        if len - self.offset > MAX_READ {
            (self.offset, self.skipping) = (len - MAX_READ, true);
            self.partial.clear();
        }
        let mut bytes = Vec::new();
        if file.seek(SeekFrom::Start(self.offset)).is_err()
            || file.take(len - self.offset).read_to_end(&mut bytes).is_err()
        {
            return Vec::new();
        }
        self.offset += bytes.len() as u64;
        let mut out = Vec::new();
        let mut rest = bytes.as_slice();
        while let Some(end) = rest.iter().position(|&b| b == b'\n') {
            let (line, after) = rest.split_at(end);
            rest = &after[1..];
            if std::mem::take(&mut self.skipping) || self.partial.len() + line.len() > MAX_LINE {
                self.partial.clear();
                continue;
            }
            self.partial.extend_from_slice(line);
            let whole = std::mem::take(&mut self.partial);
            if let Ok(act) = serde_json::from_slice::<Logged>(&whole) {
                if act.took() {
                    out.push(act);
                }
            }
        }
        if self.partial.len() + rest.len() > MAX_LINE {
            self.partial.clear();
            self.skipping = true;
        } else if !self.skipping {
            self.partial.extend_from_slice(rest);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tail_of(p: &std::path::Path) -> Tail {
        Tail { path: Some(p.to_owned()), offset: 0, partial: Vec::new(), skipping: false }
    }

    #[test]
    fn stops_that_took_are_read_as_they_are_written_and_a_half_line_waits() {
        use std::io::Write as _;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("acts.ndjson");
        let mut f = std::fs::File::create(&p).unwrap();
        let mut tail = tail_of(&p);
        let took = r#"{"kind":"interrupt","by":"guard","via":"opencode serve","server":"127.0.0.1:9","target":"ses_g","reason":"depth 2 > 1","outcome":"aborted","ts":5}"#;
        let failed = r#"{"kind":"interrupt","by":"guard","target":"ses_x","outcome":"connection refused","ts":6}"#;
        writeln!(f, "{took}\n{failed}\nnot json").unwrap();
        write!(f, r#"{{"by":"swarmtop interrupt","target":"ses_k","outcome":"Abor"#).unwrap();
        let first = tail.poll();
        assert_eq!(first.iter().map(|a| a.target.as_str()).collect::<Vec<_>>(), ["ses_g"]);
        writeln!(f, r#"ted"}}"#).unwrap();
        let second = tail.poll();
        assert_eq!(second.iter().map(|a| a.target.as_str()).collect::<Vec<_>>(), ["ses_k"], "the line, once ended");
        assert!(tail.poll().is_empty());
        let records = String::from_utf8(records(&first, |a| a.server.as_deref() == Some("127.0.0.1:9"))).unwrap();
        assert_eq!(
            records,
            "{\"act\":{\"by\":\"guard\",\"kind\":\"interrupt\",\"reason\":\"depth 2 > 1\",\"server\":\"127.0.0.1:9\",\
             \"target\":\"ses_g\",\"via\":\"opencode serve\"},\"dir\":\"in\",\"msg\":{\"swarmtop\":\"act\"},\"ts\":5}\n"
        );
    }

    /// Issue 23: an act logged through the server the census found (`127.0.0.1:N`) is the act of
    /// a monitor opened on `localhost:N`, and the other way round; another port or host is not.
    #[test]
    fn acts_match_a_server_named_by_any_loopback_host() {
        let act = |server: &str| Logged {
            ts: None,
            kind: None,
            by: None,
            via: None,
            server: Some(server.into()),
            target: "ses_a".into(),
            reason: None,
            outcome: Some("aborted".into()),
            call: None,
        };
        for (logged, monitored) in [
            ("127.0.0.1:4096", "localhost:4096"),
            ("localhost:4096", "127.0.0.1:4096"),
            ("[::1]:4096", "127.0.0.1:4096"),
            ("LocalHost:4096", "[::1]:4096"),
            ("127.0.0.1:4096", "[::ffff:127.0.0.1]:4096"),
            ("0.0.0.0:4096", "localhost:4096"),
            ("localhost.:4096", "127.0.0.2:4096"),
            ("localhost", "127.0.0.1:80"),
            ("build.example:4096", "BUILD.example:4096"),
        ] {
            assert!(act(logged).through(monitored), "{logged} through {monitored}");
        }
        for (logged, monitored) in [
            ("127.0.0.1:4096", "localhost:4097"),
            ("127.0.0.1:4096", "192.168.1.5:4096"),
            ("build.example:4096", "localhost:4096"),
            ("[::1", "[::1]:4096"),
            ("localhost:port", "localhost:4096"),
        ] {
            assert!(!act(logged).through(monitored), "{logged} not through {monitored}");
        }
        let none = Logged { server: None, ..act("x") };
        assert!(!none.through("localhost:4096"), "an act through no server");
    }

    #[test]
    fn a_line_over_the_bound_is_skipped_whole_and_a_cut_log_is_read_anew() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("acts.ndjson");
        let good = r#"{"target":"ses_a","outcome":"aborted"}"#;
        let long = format!(r#"{{"target":"ses_long","outcome":"aborted","pad":"{}"}}"#, "x".repeat(MAX_LINE));
        std::fs::write(&p, format!("{long}\n{good}\n")).unwrap();
        let mut tail = tail_of(&p);
        assert_eq!(tail.poll().iter().map(|a| a.target.as_str()).collect::<Vec<_>>(), ["ses_a"]);
        std::fs::write(&p, format!("{good}\n")).unwrap();
        assert_eq!(tail.poll().len(), 1, "a shorter log is a new one");
    }

    #[test]
    fn an_act_record_lowers_to_why_its_target_stopped() {
        let act = Logged {
            ts: Some(7),
            kind: Some("interrupt".into()),
            by: Some("guard".into()),
            via: None,
            server: None,
            target: "ses_g".into(),
            reason: Some("depth 2 > 1".into()),
            outcome: Some("aborted".into()),
            call: None,
        };
        let mut out = Vec::new();
        act.record(&mut out);
        let line = crate::wire::decode(out.strip_suffix(b"\n").unwrap()).expect("a record");
        let lowered = crate::wire::lower(&line, &crate::wire::Origin::NONE, &mut crate::wire::Stream::default());
        assert_eq!(lowered.time, Some(7));
        assert!(matches!(lowered.subject, crate::wire::fact::Subject::Control));
        let why: Vec<String> = lowered
            .facts
            .iter()
            .filter_map(|f| match f {
                crate::wire::fact::Fact::Acted(a) => Some(format!("{} {}", &*a.target, a.why.as_str())),
                _ => None,
            })
            .collect();
        assert_eq!(why, ["ses_g guard: depth 2 > 1"]);
    }
}
