//! A loopback mock of the Responses API (`POST /v1/responses`), just enough for `codex app-server` 0.171.0.
//!
//! Codex only ever calls `POST /v1/responses` (checked by logging every request of a nested run), with an
//! uncompressed JSON body and `Accept: text/event-stream`; anything else is answered 404 and logged so a
//! new codex version calling something new shows up in the test's assertions instead of hanging.
//!
//! What to answer is decided by a [`Script`] (the scenario); this file only knows HTTP/1.1, server-sent
//! events and the shape of a Responses stream. The scripts are keyed off a task tag in the agent's first
//! user message (see `scenario.rs`), and the step an agent is at is read back from the call ids it already
//! issued, so the mock needs no memory of earlier requests to know what comes next.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// Per-response token usage, in the Responses API's own terms (input includes cached input; output
/// includes reasoning), which codex copies into `thread/tokenUsage/updated`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub input: u64,
    pub cached_input: u64,
    pub output: u64,
    pub reasoning_output: u64,
}

impl Usage {
    pub fn total(&self) -> u64 {
        self.input + self.output
    }

    pub fn add(&mut self, other: Usage) {
        self.input += other.input;
        self.cached_input += other.cached_input;
        self.output += other.output;
        self.reasoning_output += other.reasoning_output;
    }

    fn to_json(self) -> Value {
        json!({
            "input_tokens": self.input,
            "input_tokens_details": {"cached_tokens": self.cached_input},
            "output_tokens": self.output,
            "output_tokens_details": {"reasoning_tokens": self.reasoning_output},
            "total_tokens": self.total(),
        })
    }
}

/// What the mock knows about one model request, parsed once for the script.
pub struct ModelRequest<'a> {
    /// The task tag of the agent (`None` when no message carries one).
    pub agent: Option<String>,
    /// The thread that made the request (codex sends it as the `thread-id` header).
    pub thread_id: Option<String>,
    pub model: Option<String>,
    /// The full request body, for scripts that need more than the parsed facts.
    pub body: &'a Value,
}

/// One scripted answer.
pub enum Reply {
    /// A streamed response: `response.created`, the given events, then `response.completed` with `usage`.
    Stream {
        events: Vec<Value>,
        usage: Usage,
        /// Think time before the first byte (the model "reading").
        pre_delay: Duration,
        /// Pause after every text delta, so long answers stream visibly.
        delta_delay: Duration,
    },
    /// An HTTP error with a JSON body; with `request_max_retries = 0` codex gives up at once.
    HttpError { status: u16, body: Value, delay: Duration },
}

pub trait Script: Send + Sync + 'static {
    fn reply(&self, req: &ModelRequest<'_>) -> Reply;
}

/// What the mock did for one request, for the test's cross-checks (e.g. per-thread token sums).
#[derive(Clone, Debug)]
pub struct Served {
    pub method: String,
    pub path: String,
    pub agent: Option<String>,
    pub thread_id: Option<String>,
    pub model: Option<String>,
    pub status: u16,
    /// Usage reported in `response.completed` (None for errors and unknown paths).
    pub usage: Option<Usage>,
}

pub struct MockModel {
    addr: SocketAddr,
    served: Arc<Mutex<Vec<Served>>>,
    accept: JoinHandle<()>,
}

impl MockModel {
    /// Binds 127.0.0.1 on a free port (never a fixed one: tests run in parallel and on shared CI hosts).
    pub async fn start(script: impl Script) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let served = Arc::new(Mutex::new(Vec::new()));
        let script: Arc<dyn Script> = Arc::new(script);
        let log = Arc::clone(&served);
        let accept = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let script = Arc::clone(&script);
                let log = Arc::clone(&log);
                tokio::spawn(async move {
                    // A connection error only ends that connection; codex retries or reports it itself.
                    let _ = serve_connection(stream, script, log).await;
                });
            }
        });
        Ok(Self { addr, served, accept })
    }

    /// The `base_url` for codex's provider config.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn served(&self) -> Vec<Served> {
        self.served.lock().expect("mock log poisoned").clone()
    }
}

impl Drop for MockModel {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// One HTTP/1.1 request as read off the socket (shared with the Anthropic mock).
pub struct Request {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

async fn serve_connection(
    stream: TcpStream,
    script: Arc<dyn Script>,
    log: Arc<Mutex<Vec<Served>>>,
) -> std::io::Result<()> {
    let (read, mut write) = stream.into_split();
    let mut read = BufReader::new(read);
    // HTTP/1.1 keep-alive: codex's client reuses connections, so serve requests until it hangs up.
    while let Some(req) = read_request(&mut read).await? {
        handle(&req, &mut write, script.as_ref(), &log).await?;
    }
    Ok(())
}

pub async fn read_request<R: AsyncBufReadExt + Unpin>(read: &mut R) -> std::io::Result<Option<Request>> {
    let mut line = String::new();
    if read.read_line(&mut line).await? == 0 {
        return Ok(None);
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_owned();
    let path = parts.next().unwrap_or_default().to_owned();
    let mut headers = Vec::new();
    loop {
        line.clear();
        if read.read_line(&mut line).await? == 0 {
            return Ok(None);
        }
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            headers.push((k.trim().to_owned(), v.trim().to_owned()));
        }
    }
    let mut req = Request { method, path, headers, body: Vec::new() };
    if req.header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        loop {
            line.clear();
            read.read_line(&mut line).await?;
            let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or("0"), 16)
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
            let mut chunk = vec![0; size + 2]; // the chunk and its CRLF
            read.read_exact(&mut chunk).await?;
            if size == 0 {
                break;
            }
            req.body.extend_from_slice(&chunk[..size]);
        }
    } else if let Some(len) = req.header("content-length").and_then(|v| v.parse::<usize>().ok()) {
        req.body = vec![0; len];
        read.read_exact(&mut req.body).await?;
    }
    Ok(Some(req))
}

async fn handle<W: AsyncWriteExt + Unpin>(
    req: &Request,
    write: &mut W,
    script: &dyn Script,
    log: &Mutex<Vec<Served>>,
) -> std::io::Result<()> {
    let thread_id = req.header("thread-id").map(str::to_owned);
    let mut served = Served {
        method: req.method.clone(),
        path: req.path.clone(),
        agent: None,
        thread_id: thread_id.clone(),
        model: None,
        status: 404,
        usage: None,
    };
    let path = req.path.split('?').next().unwrap_or_default();
    if req.method != "POST" || path != "/v1/responses" {
        log.lock().expect("mock log poisoned").push(served);
        let body = json!({"error": {"message": "not served by the swarmtop test mock", "type": "not_found"}});
        return write_json(write, 404, &body).await;
    }
    let Ok(body) = serde_json::from_slice::<Value>(&req.body) else {
        served.status = 400;
        log.lock().expect("mock log poisoned").push(served);
        let body =
            json!({"error": {"message": "mock could not decode the request body", "type": "invalid_request_error"}});
        return write_json(write, 400, &body).await;
    };
    let model_req = ModelRequest {
        agent: task_tag(&body),
        thread_id,
        model: body.get("model").and_then(Value::as_str).map(str::to_owned),
        body: &body,
    };
    served.agent.clone_from(&model_req.agent);
    served.model.clone_from(&model_req.model);
    match script.reply(&model_req) {
        Reply::HttpError { status, body, delay } => {
            served.status = status;
            log.lock().expect("mock log poisoned").push(served);
            tokio::time::sleep(delay).await;
            write_json(write, status, &body).await
        }
        Reply::Stream { events, usage, pre_delay, delta_delay } => {
            served.status = 200;
            served.usage = Some(usage);
            // Logged before streaming: codex may already act on `response.completed` (and the test may
            // already look) before this task is scheduled again.
            log.lock().expect("mock log poisoned").push(served);
            tokio::time::sleep(pre_delay).await;
            let rid = format!("resp_{}", next_response_number());
            let mut all = Vec::with_capacity(events.len() + 2);
            all.push(json!({"type": "response.created", "response": {"id": rid}}));
            all.extend(events);
            all.push(json!({"type": "response.completed", "response": {"id": rid, "usage": usage.to_json()}}));
            stream_events(write, &all, delta_delay).await
        }
    }
}

fn next_response_number() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(1);
    N.fetch_add(1, Ordering::Relaxed)
}

pub async fn write_json<W: AsyncWriteExt + Unpin>(write: &mut W, status: u16, body: &Value) -> std::io::Result<()> {
    let body = serde_json::to_vec(body).expect("serialising a Value cannot fail");
    let head = format!(
        "HTTP/1.1 {status} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        reason(status),
        body.len()
    );
    write.write_all(head.as_bytes()).await?;
    write.write_all(&body).await?;
    write.flush().await
}

/// Writes the events as one `text/event-stream` body. The length is known up front (the whole answer is
/// scripted), which keeps the HTTP side trivial; the pacing is in when each event's bytes are written.
async fn stream_events<W: AsyncWriteExt + Unpin>(
    write: &mut W,
    events: &[Value],
    delta_delay: Duration,
) -> std::io::Result<()> {
    let frames: Vec<(bool, Vec<u8>)> = events
        .iter()
        .map(|ev| {
            let kind = ev.get("type").and_then(Value::as_str).unwrap_or("message");
            let data = serde_json::to_string(ev).expect("serialising a Value cannot fail");
            (kind.rsplit('.').next() == Some("delta"), format!("event: {kind}\ndata: {data}\n\n").into_bytes())
        })
        .collect();
    let len: usize = frames.iter().map(|(_, f)| f.len()).sum();
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ncontent-length: {len}\r\n\r\n"
    );
    write.write_all(head.as_bytes()).await?;
    for (is_delta, frame) in frames {
        write.write_all(&frame).await?;
        write.flush().await?;
        if is_delta && !delta_delay.is_zero() {
            tokio::time::sleep(delta_delay).await;
        }
    }
    Ok(())
}

pub fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        529 => "Overloaded",
        _ => "Status",
    }
}

/// The agent's task tag, `[task:NAME]`, from the first user message that has one.
///
/// Codex puts its own environment context in an earlier user message, and a parent's spawn prompt becomes
/// the child's first user message, so the first tagged message names the agent that is asking.
pub fn task_tag(body: &Value) -> Option<String> {
    body.get("input")?
        .as_array()?
        .iter()
        .filter(|item| item.get("type").and_then(Value::as_str) == Some("message"))
        .filter(|item| item.get("role").and_then(Value::as_str) == Some("user"))
        .find_map(|item| parse_tag(&message_text(item)))
}

fn parse_tag(text: &str) -> Option<String> {
    let start = text.find("[task:")? + "[task:".len();
    let len = text[start..].find(']')?;
    let tag = &text[start..start + len];
    (!tag.is_empty() && tag.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'))
        .then(|| tag.to_owned())
}

/// The text of a Responses `message` item (content as a string or as typed parts).
pub fn message_text(item: &Value) -> String {
    match item.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => {
            parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect::<Vec<_>>().join(" ")
        }
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    struct Echo;
    impl Script for Echo {
        fn reply(&self, req: &ModelRequest<'_>) -> Reply {
            let text = format!("hello {}", req.agent.as_deref().unwrap_or("?"));
            Reply::Stream {
                events: vec![json!({"type": "response.output_text.delta", "delta": text})],
                usage: Usage { input: 10, cached_input: 2, output: 3, reasoning_output: 1 },
                pre_delay: Duration::ZERO,
                delta_delay: Duration::ZERO,
            }
        }
    }

    async fn exchange(addr: &str, request: String) -> String {
        let mut s = TcpStream::connect(addr).await.expect("connect");
        s.write_all(request.as_bytes()).await.expect("write");
        s.shutdown().await.expect("shutdown");
        let mut out = String::new();
        s.read_to_string(&mut out).await.expect("read");
        out
    }

    #[tokio::test]
    async fn streams_scripted_events_and_refuses_unknown_paths() {
        let mock = MockModel::start(Echo).await.expect("mock");
        let addr = mock.base_url().trim_start_matches("http://").trim_end_matches("/v1").to_owned();
        let body = r#"{"model":"m","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"[task:alpha] hi"}]}]}"#;
        let post = format!(
            "POST /v1/responses HTTP/1.1\r\nhost: x\r\nthread-id: T1\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        let sse = exchange(&addr, post).await;
        assert!(sse.starts_with("HTTP/1.1 200 OK\r\n"), "{sse}");
        assert!(sse.contains("event: response.created\n"));
        assert!(sse.contains(r#""delta":"hello alpha""#));
        assert!(sse.contains("event: response.completed\n") && sse.contains(r#""total_tokens":13"#));
        let get = exchange(&addr, "GET /v1/models HTTP/1.1\r\nhost: x\r\n\r\n".to_owned()).await;
        assert!(get.starts_with("HTTP/1.1 404 Not Found\r\n"), "{get}");
        let served = mock.served();
        assert_eq!(served.len(), 2);
        assert_eq!((served[0].agent.as_deref(), served[0].thread_id.as_deref()), (Some("alpha"), Some("T1")));
        assert_eq!(served[1].status, 404);
    }
}
