//! `swarmtop --server URL`: the machine view of a `swarmtop serve` on another machine. Its
//! `/api/feed` sends what the daemon's machine source reads there, event by event ([`codec`]),
//! and this source hands them on as if they were read here: the screen, its keys and its model
//! are the local machine view's own. A connection that breaks is made again (after a short wait
//! that grows with failures, told on screen); the feed then starts again from the server's
//! history, so what was received is dropped first (`Reset`). A refusal (no token, a server
//! without the feed) ends the source with the server's reason.

pub mod codec;

use std::io::{self, BufRead, BufReader};
use std::time::Duration;

use tokio::sync::mpsc;

use crate::source::live::{CHANNEL_EVENTS, End, Event, ResetReason};
use crate::source::sse::{Sse, SseBounds, read_sse};
use crate::wire::{Clean, sanitize_line};

/// The server sends a comment at least this often on a quiet stream (`serve::http::KEEPALIVE`
/// is 15 s): three missed in a row and the connection counts as broken.
const SILENCE: Duration = Duration::from_secs(45);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest `data:` line read: one record of the line bound, in base64, and room for the field.
pub const MAX_EVENT_LINE: usize = (crate::source::files::MAX_LINE + 1).div_ceil(3) * 4 + 64;
/// Bytes of a refusal's body kept for the reason shown.
const REFUSAL_BODY: u64 = 4 << 10;

/// A `serve` to watch: where, and the token it wants from anyone but its own user's processes.
#[derive(Clone)]
pub struct Server {
    /// `http://HOST:PORT`, without a trailing slash.
    base: String,
    token: Option<String>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the token: this may be logged.
        f.debug_struct("Server").field("base", &self.base).field("token", &self.token.as_ref().map(|_| "…")).finish()
    }
}

impl Server {
    /// `http://HOST:PORT` (or `HOST:PORT`) as `--server` gives it.
    pub fn parse(url: &str, token: Option<String>) -> Result<Self, String> {
        let url = url.trim();
        if url.starts_with("https://") {
            return Err("swarmtop serve speaks plain HTTP: reach it through an SSH tunnel \
                        (ssh -L 7077:127.0.0.1:7077 HOST, then --server http://127.0.0.1:7077)"
                .to_owned());
        }
        let rest = url.strip_prefix("http://").unwrap_or(url);
        let authority = rest.split('/').next().unwrap_or_default();
        if authority.is_empty() || authority.contains(['@', '?', '#', ' ']) {
            return Err(format!("not a server address: {url:?} (try http://127.0.0.1:7077)"));
        }
        let token = token.map(|t| t.trim().to_owned()).filter(|t| !t.is_empty());
        Ok(Self { base: format!("http://{authority}"), token })
    }

    /// `HOST:PORT`, as the screen names the source.
    pub fn authority(&self) -> &str {
        self.base.trim_start_matches("http://")
    }
}

/// Which sessions the server's feed sends: those active within `since_ms`, or all.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    pub since_ms: u64,
    pub all: bool,
}

/// The server's machine view as a live source; it runs on a thread of its own until the
/// receiver goes.
pub fn spawn(server: Server, window: Window) -> io::Result<mpsc::Receiver<Event>> {
    let (tx, rx) = mpsc::channel(CHANNEL_EVENTS);
    std::thread::Builder::new().name("source-remote".into()).spawn(move || run(&server, window, &tx))?;
    Ok(rx)
}

/// How one connection ended.
enum Ended {
    /// The receiver is gone: nothing more to do.
    Gone,
    /// The server refused us: trying again will not help.
    Refused(Clean),
    /// The connection failed or broke; `received`: events arrived on it first.
    Broke { why: Clean, received: bool },
}

fn run(server: &Server, window: Window, tx: &mpsc::Sender<Event>) {
    let config = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_connect(Some(CONNECT_TIMEOUT))
        .timeout_recv_response(Some(CONNECT_TIMEOUT * 2))
        .timeout_per_read(Some(SILENCE))
        .user_agent(concat!("swarmtop/", env!("CARGO_PKG_VERSION")))
        .build();
    let agent: ureq::Agent = config.into();
    let query = if window.all { "all=1".to_owned() } else { format!("since={}", window.since_ms) };
    let url = format!("{}/api/feed?{query}", server.base);
    let mut applied = false;
    let mut failures = 0u32;
    loop {
        let why = match connection(&agent, &url, server.token.as_deref(), tx, &mut applied) {
            Ended::Gone => return,
            Ended::Refused(why) => {
                let _ = tx.blocking_send(Event::Ended(End::Failed(why)));
                return;
            }
            Ended::Broke { why, received } => {
                failures = if received { 1 } else { failures.saturating_add(1) };
                why
            }
        };
        let wait = codec::backoff(failures);
        if tx.blocking_send(Event::Disconnected { retry_in: wait, reason: why }).is_err() {
            return;
        }
        std::thread::sleep(wait);
    }
}

/// One connection: its events handed on until it ends. `applied`: the consumer holds events of
/// an earlier connection, which a new one replaces.
fn connection(
    agent: &ureq::Agent,
    url: &str,
    token: Option<&str>,
    tx: &mpsc::Sender<Event>,
    applied: &mut bool,
) -> Ended {
    let broke = |why: Clean| Ended::Broke { why, received: false };
    let mut request = agent.get(url).header("Accept", "text/event-stream");
    if let Some(token) = token {
        request = request.header("Authorization", format!("Bearer {token}"));
    }
    let response = match request.call() {
        Ok(r) => r,
        Err(e) => return broke(sanitize_line(&e.to_string())),
    };
    let status = response.status().as_u16();
    if status != 200 {
        let body = response.into_body().with_config().limit(REFUSAL_BODY).read_to_string().unwrap_or_default();
        let why = sanitize_line(&format!("the server answered {status}: {}", body.trim()));
        // A server that is busy or stopping may take us later; one that refuses us will not.
        return if (400..500).contains(&status) && status != 429 { Ended::Refused(why) } else { broke(why) };
    }
    if *applied && tx.blocking_send(Event::Reset(ResetReason::Reconnected)).is_err() {
        return Ended::Gone;
    }
    let mut reader = BufReader::with_capacity(64 << 10, response.into_body().into_reader());
    let mut received = false;
    let result = read_events(&mut reader, &mut |event| {
        received = true;
        *applied = true;
        tx.blocking_send(event).is_ok()
    });
    match result {
        Ok(false) => Ended::Gone,
        Ok(true) => Ended::Broke { why: sanitize_line("the server closed the stream"), received },
        Err(e) => Ended::Broke { why: sanitize_line(&e.to_string()), received },
    }
}

/// What was skipped on one connection, told as it happens.
#[derive(Default)]
struct Skipped {
    /// Events the reader skipped or read with bad bytes replaced (too long, not UTF-8).
    unread: u64,
    /// Events that were read but are not ones this version knows.
    unreadable: u64,
}

impl Skipped {
    /// A notice for the first of each kind and then every thousandth: counted, never a flood.
    fn tell(n: u64, what: &str) -> Option<Event> {
        (n == 1 || n % 1000 == 0).then(|| Event::Notice(sanitize_line(&format!("{what} ({n} so far)"))))
    }
}

/// How long a line and an event of the feed may be: one record of the line bound, in base64.
const FEED_BOUNDS: SseBounds = SseBounds { line: MAX_EVENT_LINE, event: MAX_EVENT_LINE };

/// Reads server-sent events and hands each decoded one to `each` until the stream ends
/// (`Ok(true)`) or `each` wants no more (`Ok(false)`).
pub fn read_events(r: &mut dyn BufRead, each: &mut dyn FnMut(Event) -> bool) -> io::Result<bool> {
    let mut skipped = Skipped::default();
    read_sse(r, FEED_BOUNDS, &mut |item| {
        let event = match item {
            Sse::Event { kind, data } => match codec::decode(kind, data) {
                Ok(event) => event,
                Err(codec::Unreadable(why)) => {
                    skipped.unreadable += 1;
                    Skipped::tell(skipped.unreadable, &format!("the server sent {why}; skipped"))
                }
            },
            Sse::Skipped(what) => {
                skipped.unread += 1;
                // The reader's text carries its own count; the rate is this connection's.
                (skipped.unread == 1 || skipped.unread % 1000 == 0)
                    .then(|| Event::Notice(sanitize_line(&format!("from the server: {what}"))))
            }
        };
        event.is_none_or(&mut *each)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::sse::read_line;

    fn events(stream: &[u8]) -> Vec<Event> {
        let mut out = Vec::new();
        let ended = read_events(&mut &stream[..], &mut |e| {
            out.push(e);
            true
        });
        assert!(ended.unwrap(), "the stream ended");
        out
    }

    #[test]
    fn a_stream_is_read_event_by_event() {
        let mut stream = b"retry: 2000\n\n: keepalive\n\n".to_vec();
        for e in [Event::Live, Event::Resumed("s".into())] {
            for w in codec::encode(&e) {
                stream.extend(w.frame().replace('\n', "\r\n").into_bytes());
            }
        }
        stream.extend(b"event: newer-kind\ndata: {}\n\n");
        assert_eq!(events(&stream), [Event::Live, Event::Resumed("s".into())]);
    }

    #[test]
    fn what_cannot_be_read_is_told_and_skipped() {
        let got = events(b"event: stopped\ndata: {}\n\nevent: live\ndata: {}\n\n");
        assert!(matches!(&got[0], Event::Notice(t) if t.as_str().contains("a stopped event")), "{got:?}");
        assert_eq!(got[1], Event::Live);
    }

    #[test]
    fn a_line_over_the_bound_is_skipped_not_kept() {
        let mut line = Vec::new();
        let text = format!("data: {}\nevent: live\n", "x".repeat(100));
        let mut r = text.as_bytes();
        assert!(read_line(&mut r, 16, usize::MAX, &mut line).unwrap().cut);
        assert_eq!(line.len(), 16);
        assert!(!read_line(&mut r, 16, usize::MAX, &mut line).unwrap().cut);
        assert_eq!(line, b"event: live");
        assert_eq!(read_line(&mut r, 16, usize::MAX, &mut line).unwrap().consumed, 0);
    }

    #[test]
    fn servers_are_named_as_http_addresses() {
        assert_eq!(Server::parse("http://127.0.0.1:7077/", None).unwrap().base, "http://127.0.0.1:7077");
        assert_eq!(Server::parse("box:7077", Some(" t \n".into())).unwrap().token.as_deref(), Some("t"));
        assert!(Server::parse("https://box:7077", None).unwrap_err().contains("SSH tunnel"));
        assert!(Server::parse("http://", None).is_err());
        assert!(!format!("{:?}", Server::parse("box:1", Some("secret".into())).unwrap()).contains("secret"));
    }
}
