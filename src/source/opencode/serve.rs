//! `opencode serve`'s `/event` stream as a live source, on a thread of its own: first what the
//! server holds ([`Serve::All`], [`super::resync`]), then every event as it comes. When the stream
//! breaks (the server restarts, the connection drops), the thread reconnects with backoff and
//! resyncs. The backoff grows while the stream keeps failing, even when connecting succeeds: a
//! server that answered 200 and closed got 9,876 requests in 10 minutes when every connect reset
//! it (issue 22 item 7). Each loss and each failed attempt is told with its reason, clean.

use std::io;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde::de::IgnoredAny;

use super::channel::{ChannelReader, Sender, channel};
use super::http::{self, EVENT_STREAM, Response};
use super::records;
use super::resync::server_state;
use crate::source::acts::{self, Tail};
use crate::source::live;
use crate::source::sse::{Sse, SseBounds, read_sse};
use crate::wire::{Clean, sanitize_line};

/// First wait before reconnecting to a server; doubled after each failure up to [`BACKOFF_MAX`].
pub const BACKOFF_FIRST: Duration = Duration::from_millis(250);
pub const BACKOFF_MAX: Duration = Duration::from_secs(5);
/// A stream that stayed up this long was a working one: after its loss the backoff starts again
/// from [`BACKOFF_FIRST`]. Shorter, it counts as one more failure.
pub const STEADY: Duration = Duration::from_secs(30);

/// How often the acts log is looked at again while events arrive (`source::acts`).
const ACTS_EVERY: Duration = Duration::from_millis(250);

/// How a server stream's connection goes, told beside its records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Link {
    /// The stream broke, or an attempt to connect again failed; the next is in `retry_in`.
    Lost { retry_in: Duration, reason: Clean },
    /// Connected again after `down`, and resynced from the server's API; `skipped` sessions kept
    /// only what the stream gave them (`MAX_RESYNC_SESSIONS`).
    Restored { down: Duration, skipped: usize },
}

/// A server stream's connection as the live events a screen shows: the status while it is down,
/// a notice when it is back. `false` once the consumer has gone.
pub fn link_events(tx: tokio::sync::mpsc::Sender<live::Event>) -> impl FnMut(Link) -> bool + Send + 'static {
    move |link| {
        let event = match link {
            Link::Lost { retry_in, reason } => live::Event::Disconnected { retry_in, reason },
            Link::Restored { down, skipped } => {
                let text = format!("reconnected after {:.1}s; resynced from the server", down.as_secs_f64());
                let text = match skipped {
                    0 => text,
                    n => format!("{text} ({n} older sessions not refetched)"),
                };
                live::Event::Notice(sanitize_line(&text))
            }
        };
        tx.blocking_send(event).is_ok()
    }
}

/// What a server stream hands on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Serve {
    /// Everything: what the server holds, then every event (the server is the only source).
    All,
    /// Only what the store does not have: text as it streams and the sessions' busy, retry and
    /// idle statuses (the store, followed too, gives the rows and their figures).
    Deltas,
}

#[derive(Deserialize)]
struct Kind<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<std::borrow::Cow<'a, str>>,
}

/// One event's data as the record it becomes, if `serve` hands it on.
fn event_record(data: &str, serve: Serve, out: &mut Vec<u8>) {
    match serde_json::from_str::<Kind<'_>>(data) {
        Ok(Kind { kind }) => {
            let delta = matches!(kind.as_deref(), Some("message.part.delta" | "session.status" | "session.idle"));
            if serve == Serve::All || delta {
                records::sse_raw(out, data);
            }
        }
        Err(_) if serve == Serve::Deltas => {}
        // JSON that is no object is handed on as it is; text that is not JSON, as a string: for the
        // pipeline to count rather than to lose.
        Err(_) if serde_json::from_str::<IgnoredAny>(data).is_ok() => records::sse_raw(out, data),
        Err(_) => records::sse_text(out, data),
    }
}

/// An event stream's events as the records `serve` hands on, and what was skipped as notices,
/// into `each` (an event's records at a time) until the stream ends (`Ok(true)`) or `each`
/// wants no more (`Ok(false)`).
pub fn sse_records(
    body: &mut dyn std::io::BufRead,
    serve: Serve,
    bounds: SseBounds,
    mut each: impl FnMut(Vec<u8>) -> bool,
) -> io::Result<bool> {
    let mut out = Vec::new();
    read_sse(body, bounds, &mut |item| {
        match item {
            // OpenCode's events are their data; a name alone carries nothing.
            Sse::Event { data: "", .. } => {}
            Sse::Event { data, .. } => event_record(data, serve, &mut out),
            Sse::Skipped(text) => records::notice(&mut out, "stream", &text),
        }
        out.is_empty() || each(std::mem::take(&mut out))
    })
}

/// `opencode serve`'s `/event` stream on a thread of its own, as records (see the module's doc);
/// `link` hears how the connection goes, and the thread stops when `link` returns `false` or the
/// reader is dropped. The first connection is made before this returns: an address that does not
/// answer is an error.
pub fn server_reader(
    authority: &str,
    serve: Serve,
    link: impl FnMut(Link) -> bool + Send + 'static,
) -> io::Result<ChannelReader> {
    let first = http::get(authority, "/event", EVENT_STREAM)?;
    let (tx, rx) = channel();
    // A full read hands on every stop logged of this server after its sessions; deltas only new
    // ones (the store read beside them has the rest).
    let acts = match serve {
        Serve::All => Tail::new(),
        Serve::Deltas => Tail::from_end(),
    };
    let acts = Acts { tail: acts, checked: Instant::now(), authority: authority.to_owned() };
    let stream = Stream { authority: authority.to_owned(), serve, link, tx, wait: BACKOFF_FIRST, acts };
    std::thread::Builder::new().name("source-opencode-serve".into()).spawn(move || stream.run(first))?;
    Ok(rx)
}

struct Stream<L> {
    authority: String,
    serve: Serve,
    link: L,
    tx: Sender,
    /// The wait before the next attempt.
    wait: Duration,
    acts: Acts,
}

/// The stops swarmtop logged of one server's sessions (`source::acts`), followed.
struct Acts {
    tail: Tail,
    checked: Instant,
    authority: String,
}

impl Acts {
    /// The stops through this server logged since the last look, as records.
    fn records(&mut self) -> Vec<u8> {
        self.checked = Instant::now();
        acts::records(&self.tail.poll(), |a| a.through(&self.authority))
    }

    /// [`Acts::records`] when the last look is [`ACTS_EVERY`] old.
    fn due(&mut self) -> Vec<u8> {
        if self.checked.elapsed() < ACTS_EVERY { Vec::new() } else { self.records() }
    }
}

impl<L: FnMut(Link) -> bool> Stream<L> {
    fn run(mut self, mut response: Response) {
        let mut lost: Option<Instant> = None;
        loop {
            let connected = Instant::now();
            if response.head.skipped > 0 {
                let mut out = Vec::new();
                let text = format!("{} response header line(s) over their bound skipped", response.head.skipped);
                records::notice(&mut out, "stream", &text);
                self.tx.send(out);
            }
            let skipped = match self.serve {
                Serve::All => match server_state(&self.authority, &mut |records| self.tx.send(records)) {
                    Some(n) => n,
                    None => return,
                },
                Serve::Deltas => 0,
            };
            if self.serve == Serve::All {
                // After a resync, every stop again: the sessions were handed on anew.
                if lost.is_some() {
                    self.acts.tail = Tail::new();
                }
                if !self.tx.send(self.acts.records()) {
                    return;
                }
            }
            if let Some(at) = lost.take() {
                if !(self.link)(Link::Restored { down: at.elapsed(), skipped }) {
                    return;
                }
            }
            let Some(reason) = self.stream(&mut response) else { return };
            if connected.elapsed() >= STEADY {
                self.wait = BACKOFF_FIRST;
            }
            lost = Some(Instant::now());
            match self.reconnect(reason) {
                Some(r) => response = r,
                None => return,
            }
        }
    }

    /// Hands on the stream's events until it ends: why it ended, or `None` when no one wants more.
    fn stream(&mut self, response: &mut Response) -> Option<String> {
        let (tx, acts) = (&self.tx, &mut self.acts);
        let each = |records| tx.send(records) && tx.send(acts.due());
        match sse_records(&mut *response.body, self.serve, SseBounds::default(), each) {
            Ok(false) => None,
            Ok(true) => Some("the server closed the stream".to_owned()),
            Err(e) => Some(e.to_string()),
        }
    }

    /// Connects again, waiting longer after each failure; `None` once no one wants more.
    fn reconnect(&mut self, mut reason: String) -> Option<Response> {
        loop {
            if self.tx.closed() || !(self.link)(Link::Lost { retry_in: self.wait, reason: sanitize_line(&reason) }) {
                return None;
            }
            std::thread::sleep(self.wait);
            self.wait = (self.wait * 2).min(BACKOFF_MAX);
            match http::get(&self.authority, "/event", EVENT_STREAM) {
                Ok(r) => return Some(r),
                Err(e) => reason = e.to_string(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(data: &str, serve: Serve) -> String {
        let mut out = Vec::new();
        event_record(data, serve, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn events_become_records_and_deltas_only_what_the_store_lacks() {
        let delta = r#"{"type":"message.part.delta","properties":{"delta":"wor"}}"#;
        assert_eq!(record(delta, Serve::Deltas), format!("{{\"opencode\":\"sse\",\"event\":{delta}}}\n"));
        assert_eq!(record(r#"{"type":"message.updated"}"#, Serve::Deltas), "");
        assert_eq!(record("{\"type\":\n\"x\"}", Serve::All), "{\"opencode\":\"sse\",\"event\":{\"type\":\"x\"}}\n");
        assert_eq!(record("not json", Serve::All), "{\"event\":\"not json\",\"opencode\":\"sse\"}\n");
        assert_eq!(record("not json", Serve::Deltas), "");
    }
}
