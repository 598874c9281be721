//! The tee's hands: a request of swarmtop's own (an interrupt) written into the command's stdin
//! between the client's lines, and the command's answer to it kept from the client. This is the
//! control channel of the tee's socket (`recording.md`, "Acting through the tee").
//!
//! - Ids: every request gets `swarmtop-<nonce>-<n>`, a string no client can know (the nonce is
//!   random per tee), so it never collides with the client's own ids, which pass untouched.
//! - Lines: the client's bytes are forwarded as they come; a request waits for the end of the
//!   client's line in progress and goes in between two lines.
//! - Record, then forward: the request is recorded (an envelope with `act`: what, by whom, why)
//!   before it is written; the answer is recorded like every line of the command's, but only lines
//!   that are not answers of ours reach the client.
//! - The answer is found by the value at a path (`["id"]` for a JSON-RPC response) equal to the
//!   request's id; only lines containing the nonce are parsed, and only while an answer is due.
//!
//! Nothing here knows an agent: the request's body and where its id goes come from the caller.

use std::borrow::Cow;
use std::hash::{BuildHasher, Hasher};
use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use serde::Deserialize;
use serde_json::{Map, Value};
use tokio::sync::mpsc;

use super::hub::{Control, Hub, Peer};
use super::recording;

/// A line held back from the client while an answer is due is released past this size: our
/// answers are a few hundred bytes, so a line this long is not one of them.
const MAX_HELD_LINE: usize = 64 << 10;

/// What a control connection asks: `{"swarmtop":"act","tag":…,"act":{…},"send":{…},"idAt":[…],
/// "answerAt":[…]}`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Request {
    swarmtop: String,
    /// The asker's own label for the request, echoed in every reply about it.
    #[serde(default)]
    tag: Value,
    /// What the act is, recorded with it: `{"kind": "interrupt", "by": "…", "target": "…", "reason": "…"}`.
    act: Map<String, Value>,
    /// The message to write, without its id.
    send: Map<String, Value>,
    #[serde(default = "id_path")]
    id_at: Vec<String>,
    #[serde(default = "id_path")]
    answer_at: Vec<String>,
}

fn id_path() -> Vec<String> {
    vec!["id".to_owned()]
}

/// An answer due from the command.
struct Due {
    id: String,
    answer_at: Vec<String>,
    tag: Value,
    reply: mpsc::UnboundedSender<Vec<u8>>,
}

/// The command's stdin, shared by the client's pump and the injector.
struct Inbound {
    to: Option<Box<dyn Write + Send>>,
    /// The client's bytes forwarded so far end inside a line.
    mid_line: bool,
    /// Requests waiting for the client's line to end.
    queued: Vec<Vec<u8>>,
}

/// The command's stdout as the client should see it: what the s2c pump holds back while an answer
/// is due. Owned by that pump.
#[derive(Default)]
pub struct Outbound {
    /// A line begun but not forwarded (it may be an answer).
    held: Vec<u8>,
    /// The bytes forwarded so far end inside a line (forwarded before any answer was due).
    mid_line: bool,
}

pub struct Injector {
    nonce: String,
    next: AtomicU64,
    hub: Arc<Hub>,
    inbound: Mutex<Inbound>,
    due: Mutex<Vec<Due>>,
    /// `due.len()`, read without the lock on every batch of the command's output.
    due_count: AtomicUsize,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic elsewhere must not stop the proxy.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Injector {
    pub fn new(hub: Arc<Hub>, to: Box<dyn Write + Send>) -> Self {
        // The standard library seeds each `RandomState` from the operating system's randomness.
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        h.write_i64(recording::unix_ms());
        Self {
            nonce: format!("swarmtop-{:016x}", h.finish()),
            next: AtomicU64::new(1),
            hub,
            inbound: Mutex::new(Inbound { to: Some(to), mid_line: false, queued: Vec::new() }),
            due: Mutex::new(Vec::new()),
            due_count: AtomicUsize::new(0),
        }
    }

    /// Forwards the client's bytes, putting in between two of its lines the requests that waited
    /// for one to end. An error means the command's stdin is gone.
    pub fn forward(&self, chunk: &[u8]) -> io::Result<()> {
        let mut inb = lock(&self.inbound);
        let Inbound { to, mid_line, queued } = &mut *inb;
        let Some(w) = to.as_mut() else { return Err(io::ErrorKind::BrokenPipe.into()) };
        let result = match memchr::memchr(b'\n', chunk).filter(|_| !queued.is_empty()) {
            Some(i) => (|| {
                w.write_all(&chunk[..=i])?;
                for line in queued.drain(..) {
                    w.write_all(&line)?;
                }
                w.write_all(&chunk[i + 1..])
            })(),
            None => w.write_all(chunk),
        };
        if let Some(&last) = chunk.last() {
            *mid_line = last != b'\n';
        }
        if result.is_err() {
            *to = None;
        }
        result
    }

    /// The client is gone: the command's stdin closes (how it learns that), unless a request is
    /// waiting for the client's line to end — that line never will, so it goes now.
    pub fn close_inbound(&self) {
        let mut inb = lock(&self.inbound);
        let Inbound { to, mid_line, queued } = &mut *inb;
        if let (Some(w), false) = (to.as_mut(), queued.is_empty()) {
            let prefix: &[u8] = if *mid_line { b"\n" } else { b"" };
            let _ = w.write_all(prefix);
            for line in queued.drain(..) {
                let _ = w.write_all(&line);
            }
        }
        *to = None;
    }

    /// What of the command's output goes to the client: everything but our answers, which go to
    /// whoever asked.
    pub fn keep_from_client<'a>(&self, out: &mut Outbound, chunk: &'a [u8]) -> Cow<'a, [u8]> {
        if self.due_count.load(Ordering::Acquire) == 0 && out.held.is_empty() {
            if let Some(&last) = chunk.last() {
                out.mid_line = last != b'\n';
            }
            return Cow::Borrowed(chunk);
        }
        let mut keep = Vec::with_capacity(chunk.len());
        let mut rest = chunk;
        if out.mid_line {
            // The rest of a line begun before any answer was due: not an answer.
            let Some(i) = memchr::memchr(b'\n', rest) else { return Cow::Borrowed(chunk) };
            keep.extend_from_slice(&rest[..=i]);
            rest = &rest[i + 1..];
            out.mid_line = false;
        }
        let mut data = std::mem::take(&mut out.held);
        data.extend_from_slice(rest);
        let mut start = 0;
        while let Some(i) = memchr::memchr(b'\n', &data[start..]) {
            let line = &data[start..start + i];
            if !self.answered(line) {
                keep.extend_from_slice(&data[start..=start + i]);
            }
            start += i + 1;
        }
        let tail = &data[start..];
        if self.due_count.load(Ordering::Acquire) == 0 || tail.len() > MAX_HELD_LINE {
            keep.extend_from_slice(tail);
            out.mid_line = !tail.is_empty();
        } else {
            out.held = tail.to_vec();
        }
        Cow::Owned(keep)
    }

    /// What was held back when the command's output ends (a last line without its newline).
    pub fn release(&self, out: &mut Outbound) -> Vec<u8> {
        std::mem::take(&mut out.held)
    }

    /// Whether `line` answers one of our requests; if so, the asker is told.
    fn answered(&self, line: &[u8]) -> bool {
        if memchr::memmem::find(line, self.nonce.as_bytes()).is_none() {
            return false;
        }
        let Ok(msg) = serde_json::from_slice::<Value>(line) else { return false };
        let mut due = lock(&self.due);
        let Some(at) = due.iter().position(|d| at_path(&msg, &d.answer_at).and_then(Value::as_str) == Some(&d.id))
        else {
            return false;
        };
        let d = due.swap_remove(at);
        self.due_count.store(due.len(), Ordering::Release);
        let mut reply = format!(
            "{{\"swarmtop\":\"answer\",\"tag\":{},\"requestId\":{},\"msg\":",
            d.tag,
            Value::from(d.id.as_str())
        )
        .into_bytes();
        reply.extend_from_slice(line);
        reply.extend_from_slice(b"}\n");
        let _ = d.reply.send(reply);
        true
    }

    fn inject(&self, request: Request, peer: Peer, reply: &mpsc::UnboundedSender<Vec<u8>>) -> Result<String, String> {
        if request.swarmtop != "act" {
            return Err(format!("unknown request {:?}", request.swarmtop));
        }
        let id = format!("{}-{}", self.nonce, self.next.fetch_add(1, Ordering::Relaxed));
        let mut msg = Value::Object(request.send);
        set_path(&mut msg, &request.id_at, Value::from(id.as_str()))?;
        let line = serde_json::to_vec(&msg).map_err(|e| e.to_string())?;
        let mut act = request.act;
        act.insert("requestId".into(), Value::from(id.as_str()));
        if let Some(pid) = peer.pid {
            act.insert("pid".into(), Value::from(pid));
        }
        {
            let mut due = lock(&self.due);
            let (answer_at, tag) = (request.answer_at, request.tag);
            due.push(Due { id: id.clone(), answer_at, tag, reply: reply.clone() });
            self.due_count.store(due.len(), Ordering::Release);
        }
        let ts = recording::unix_ms();
        let mut record = format!("{{\"ts\":{ts},\"dir\":\"c2s\",\"act\":{},\"msg\":", Value::Object(act)).into_bytes();
        record.extend_from_slice(&line);
        record.extend_from_slice(b"}\n");
        let (batch, _) = self.hub.append(&record, ts);
        let mut line = line;
        line.push(b'\n');
        let written = self.write(line);
        self.hub.offer(&batch);
        if let Err(e) = written {
            let mut due = lock(&self.due);
            due.retain(|d| d.id != id);
            self.due_count.store(due.len(), Ordering::Release);
            return Err(format!("writing to the command: {e}"));
        }
        Ok(id)
    }

    /// Writes a whole line of ours now, or after the client's line in progress.
    fn write(&self, line: Vec<u8>) -> io::Result<()> {
        let mut inb = lock(&self.inbound);
        if inb.mid_line {
            inb.queued.push(line);
            return Ok(());
        }
        let Some(w) = inb.to.as_mut() else { return Err(io::ErrorKind::BrokenPipe.into()) };
        let written = w.write_all(&line).and_then(|()| w.flush());
        if written.is_err() {
            inb.to = None;
        }
        written
    }
}

impl Control for Injector {
    fn request(&self, line: &[u8], peer: Peer, reply: &mpsc::UnboundedSender<Vec<u8>>) {
        let tag = serde_json::from_slice::<Value>(line).ok().and_then(|v| v.get("tag").cloned()).unwrap_or_default();
        let outcome = serde_json::from_slice::<Request>(line)
            .map_err(|e| format!("not a request: {e}"))
            .and_then(|r| self.inject(r, peer, reply));
        let text = match outcome {
            Ok(id) => format!("{{\"swarmtop\":\"acted\",\"tag\":{tag},\"requestId\":{}}}\n", Value::from(id)),
            Err(e) => format!("{{\"swarmtop\":\"refused\",\"tag\":{tag},\"error\":{}}}\n", Value::from(e)),
        };
        let _ = reply.send(text.into_bytes());
    }
}

/// The control channel of monitors accepted before the command runs (the first monitor a tee waits
/// for): requests are refused until the command's stdin exists, then handled by its injector.
#[derive(Default)]
pub struct Deferred(OnceLock<Arc<Injector>>);

impl Deferred {
    pub fn set(&self, injector: Arc<Injector>) {
        let _ = self.0.set(injector);
    }
}

impl Control for Deferred {
    fn request(&self, line: &[u8], peer: Peer, reply: &mpsc::UnboundedSender<Vec<u8>>) {
        if let Some(injector) = self.0.get() {
            injector.request(line, peer, reply);
            return;
        }
        let tag = serde_json::from_slice::<Value>(line).ok().and_then(|v| v.get("tag").cloned()).unwrap_or_default();
        let text = format!("{{\"swarmtop\":\"refused\",\"tag\":{tag},\"error\":\"the command is not running yet\"}}\n");
        let _ = reply.send(text.into_bytes());
    }
}

fn at_path<'v>(v: &'v Value, path: &[String]) -> Option<&'v Value> {
    path.iter().try_fold(v, |v, k| v.get(k))
}

fn set_path(v: &mut Value, path: &[String], value: Value) -> Result<(), String> {
    let Some((last, parents)) = path.split_last() else { return Err("an empty id path".into()) };
    let mut cur = v;
    for k in parents {
        let Value::Object(map) = cur else { return Err(format!("the id path crosses a non-object at {k:?}")) };
        cur = map.entry(k.clone()).or_insert_with(|| Value::Object(Map::new()));
    }
    let Value::Object(map) = cur else { return Err(format!("the id path ends in a non-object at {last:?}")) };
    map.insert(last.clone(), value);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A command's stdin that the test can read back.
    #[derive(Clone, Default)]
    struct Pipe(Arc<Mutex<Vec<u8>>>);

    impl Write for Pipe {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            lock(&self.0).extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn injector() -> (Injector, Pipe, Arc<Hub>) {
        let hub = Arc::new(Hub::in_memory(b"H\n".to_vec()));
        let pipe = Pipe::default();
        (Injector::new(hub.clone(), Box::new(pipe.clone())), pipe, hub)
    }

    fn ask(inj: &Injector, act: &str) -> (mpsc::UnboundedReceiver<Vec<u8>>, String) {
        let (tx, mut rx) = mpsc::unbounded_channel();
        inj.request(act.as_bytes(), Peer { pid: Some(42) }, &tx);
        let reply: Value = serde_json::from_slice(&rx.try_recv().expect("a reply")).expect("JSON");
        assert_eq!(reply["swarmtop"], "acted", "{reply}");
        (rx, reply["requestId"].as_str().expect("an id").to_owned())
    }

    const INTERRUPT: &str = r#"{"swarmtop":"act","tag":7,"act":{"kind":"interrupt","by":"test"},"send":{"method":"turn/interrupt","params":{"threadId":"t","turnId":"u"}}}"#;

    #[test]
    fn a_request_waits_for_the_clients_line_to_end_and_keeps_its_own_id() {
        let (inj, pipe, _) = injector();
        inj.forward(b"{\"id\":1,\"method\":\"thread/st").unwrap();
        let (_, id) = ask(&inj, INTERRUPT);
        assert!(id.starts_with("swarmtop-") && id.ends_with("-1"));
        assert_eq!(lock(&pipe.0).as_slice(), b"{\"id\":1,\"method\":\"thread/st", "not inside the client's line");
        inj.forward(b"art\"}\n{\"id\":2,").unwrap();
        let written = String::from_utf8(lock(&pipe.0).clone()).unwrap();
        let lines: Vec<&str> = written.split('\n').collect();
        assert_eq!(lines[0], "{\"id\":1,\"method\":\"thread/start\"}");
        let ours: Value = serde_json::from_str(lines[1]).unwrap();
        assert_eq!(ours["id"], id.as_str());
        assert_eq!(ours["method"], "turn/interrupt");
        assert_eq!(lines[2], "{\"id\":2,", "the client's next line follows, untouched");
    }

    #[test]
    fn the_request_is_recorded_as_an_act_before_it_is_written() {
        let (inj, _, hub) = injector();
        let (_, id) = ask(&inj, INTERRUPT);
        let log = hub.history_for_tests();
        let record: Value = serde_json::from_str(log.lines().nth(1).expect("a record")).unwrap();
        assert_eq!(record["dir"], "c2s");
        assert_eq!(record["act"]["kind"], "interrupt");
        assert_eq!(record["act"]["pid"], 42);
        assert_eq!(record["act"]["requestId"], id.as_str());
        assert_eq!(record["msg"]["id"], id.as_str());
    }

    #[test]
    fn the_answer_goes_to_the_asker_and_everything_else_to_the_client() {
        let (inj, _, _) = injector();
        let mut out = Outbound::default();
        assert_eq!(&*inj.keep_from_client(&mut out, b"{\"method\":\"turn/sta"), b"{\"method\":\"turn/sta");
        let (mut rx, id) = ask(&inj, INTERRUPT);
        let answer = format!("{{\"id\":\"{id}\",\"result\":{{}}}}\n");
        let chunk = format!("rted\"}}\n{{\"id\":3,\"result\":{{}}}}\n{}", &answer[..10]);
        let kept = inj.keep_from_client(&mut out, chunk.as_bytes()).into_owned();
        assert_eq!(kept, b"rted\"}\n{\"id\":3,\"result\":{}}\n", "the client's own response passes");
        let next = format!("{}{{\"method\":\"y\"}}\n", &answer[10..]);
        let kept = inj.keep_from_client(&mut out, next.as_bytes());
        assert_eq!(&*kept, b"{\"method\":\"y\"}\n", "our answer, split across reads, is kept from the client");
        let told: Value = serde_json::from_slice(&rx.try_recv().expect("the asker is told")).unwrap();
        assert_eq!(told["swarmtop"], "answer");
        assert_eq!(told["tag"], 7);
        assert_eq!(told["msg"]["id"], id.as_str());
        assert_eq!(&*inj.keep_from_client(&mut out, b"{\"a\":1}\n"), b"{\"a\":1}\n");
    }

    #[test]
    fn a_line_that_only_mentions_our_id_is_the_clients() {
        let (inj, _, _) = injector();
        let mut out = Outbound::default();
        let (_, id) = ask(&inj, INTERRUPT);
        let echo = format!("{{\"method\":\"item/agentMessage/delta\",\"params\":{{\"delta\":\"{id}\"}}}}\n");
        assert_eq!(&*inj.keep_from_client(&mut out, echo.as_bytes()), echo.as_bytes());
    }

    #[test]
    fn ids_go_where_the_asker_says_and_bad_requests_are_refused() {
        let (inj, pipe, _) = injector();
        let claude = r#"{"swarmtop":"act","tag":"c","act":{"kind":"interrupt"},"send":{"type":"control_request","request":{"subtype":"interrupt"}},"idAt":["request_id"],"answerAt":["response","request_id"]}"#;
        let (mut rx, id) = ask(&inj, claude);
        let sent: Value = serde_json::from_slice(lock(&pipe.0).strip_suffix(b"\n").unwrap()).unwrap();
        assert_eq!(sent["request_id"], id.as_str());
        let mut out = Outbound::default();
        let answer = format!(
            "{{\"type\":\"control_response\",\"response\":{{\"subtype\":\"success\",\"request_id\":\"{id}\"}}}}\n"
        );
        assert!(inj.keep_from_client(&mut out, answer.as_bytes()).is_empty());
        assert!(rx.try_recv().is_ok());

        let (tx, mut rx) = mpsc::unbounded_channel();
        inj.request(b"{\"swarmtop\":\"act\",\"tag\":1}", Peer { pid: None }, &tx);
        let reply: Value = serde_json::from_slice(&rx.try_recv().unwrap()).unwrap();
        assert_eq!((reply["swarmtop"].as_str(), reply["tag"].as_i64()), (Some("refused"), Some(1)));
    }
}
