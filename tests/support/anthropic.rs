//! A loopback mock of the Anthropic Messages API, just enough for the real Claude Code CLI 2.1.332.
//!
//! With the environment `claude_driver.rs` sets, the CLI only calls `POST /v1/messages?beta=true`, streaming
//! (wire.md §8); `count_tokens` and non-streaming calls are answered too, anything else 404 and logged, so a
//! new CLI calling something new shows up in the test's assertions instead of hanging.
//!
//! The stream is what the real API sends: `message_start` carrying the input side of the usage (with the
//! cache-write breakdown) and `output_tokens: 1`, `ping`, one `content_block_start` / `_delta` / `_stop` group
//! per block (`text_delta`, `thinking_delta` + `signature_delta`, `input_json_delta`), `message_delta` with
//! the stop reason and the final `output_tokens`, `message_stop`; every answer has a `request-id` header.
//!
//! Which agent asks is read from the request alone (no session state, so parallel agents and retries need
//! nothing else): the `[[agent:NAME]]` marker in the first user message, `cc_is_subagent=true;` in the first
//! line of a sub-agent's system prompt, and the step = the number of assistant messages already in
//! `messages`. Only the attempt number (retries of one step) is counted here.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::mock_model::{Request, read_request, reason};

/// One response's usage in the Anthropic API's own terms: `input` excludes the cache, the cache writes are
/// split by lifetime (prices differ: 1.25x and 2x input).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub input: u64,
    pub cache_write_5m: u64,
    pub cache_write_1h: u64,
    pub cache_read: u64,
    pub output: u64,
}

impl Usage {
    pub fn cache_write(&self) -> u64 {
        self.cache_write_5m + self.cache_write_1h
    }

    pub fn total(&self) -> u64 {
        self.input + self.cache_write() + self.cache_read + self.output
    }

    pub fn add(&mut self, o: Usage) {
        self.input += o.input;
        self.cache_write_5m += o.cache_write_5m;
        self.cache_write_1h += o.cache_write_1h;
        self.cache_read += o.cache_read;
        self.output += o.output;
    }

    /// The usage object of `message_start` (output 1, as the real API) or of a non-streamed message.
    fn to_json(self, output: u64) -> Value {
        json!({
            "input_tokens": self.input,
            "cache_creation_input_tokens": self.cache_write(),
            "cache_read_input_tokens": self.cache_read,
            "cache_creation": {
                "ephemeral_5m_input_tokens": self.cache_write_5m,
                "ephemeral_1h_input_tokens": self.cache_write_1h,
            },
            "output_tokens": output,
            "service_tier": "standard",
        })
    }
}

/// What the mock knows about one request, parsed once for the script.
pub struct MessagesRequest<'a> {
    /// The `[[agent:NAME]]` marker of the first user message, if any.
    pub agent: Option<String>,
    /// `cc_is_subagent=true;` in the first line of the system prompt.
    pub is_subagent: bool,
    /// Assistant messages already in `messages`.
    pub step: usize,
    pub model: Option<String>,
    pub tools: Vec<String>,
    /// Retries of the same (agent, step) count up from 1.
    pub attempt: u32,
    pub body: &'a Value,
}

/// One content block of a scripted answer.
#[derive(Clone, Debug)]
pub enum Block {
    Text(String),
    Thinking(String),
    ToolUse { id: String, name: String, input: Value },
}

/// One scripted answer.
pub enum Reply {
    Message {
        blocks: Vec<Block>,
        stop: &'static str,
        usage: Usage,
        /// The model the answer says it is (the requested one when `None`).
        model: Option<String>,
        /// Think time before the first byte.
        pre_delay: Duration,
        /// Pause after every delta, so answers stream visibly (live tests, the interrupt).
        delta_delay: Duration,
        /// Raise [`MockAnthropic::streaming`] once a few deltas of this answer are out.
        signal: bool,
    },
    /// An HTTP error with the API's error body (`{"type":"error","error":{type,message}}`).
    Error { status: u16, kind: &'static str, message: &'static str },
}

impl Reply {
    /// A prompt answer of one small, fixed usage, after a short think time: what a test uses when
    /// the figures are not its subject.
    pub fn answer(blocks: Vec<Block>, stop: &'static str) -> Self {
        Self::Message {
            blocks,
            stop,
            usage: Usage { input: 100, cache_write_5m: 10, cache_write_1h: 0, cache_read: 1000, output: 20 },
            model: None,
            pre_delay: Duration::from_millis(20),
            delta_delay: Duration::ZERO,
            signal: false,
        }
    }
}

pub trait Script: Send + Sync + 'static {
    fn reply(&self, req: &MessagesRequest<'_>) -> Reply;
}

impl<'a> MessagesRequest<'a> {
    /// What the script needs of a Messages request, counting this attempt at its (agent, step).
    fn read(body: &'a Value, attempts: &Mutex<Attempts>) -> Self {
        let messages = body.get("messages").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
        let agent = first_user_text(messages).as_deref().and_then(marker);
        let is_subagent =
            system_text(body.get("system")).lines().next().unwrap_or_default().contains("cc_is_subagent=true;");
        let step = messages.iter().filter(|m| m.get("role").and_then(Value::as_str) == Some("assistant")).count();
        let attempt = {
            let mut a = attempts.lock().expect("attempts poisoned");
            let n = a.entry((agent.clone(), is_subagent, step)).or_insert(0);
            *n += 1;
            *n
        };
        let tools = body
            .get("tools")
            .and_then(Value::as_array)
            .map(|t| t.iter().filter_map(|t| t.get("name").and_then(Value::as_str).map(str::to_owned)).collect())
            .unwrap_or_default();
        let model = body.get("model").and_then(Value::as_str).map(str::to_owned);
        Self { agent, is_subagent, step, model, tools, attempt, body }
    }
}

/// What the mock did for one request, for the test's cross-checks.
#[derive(Clone, Debug)]
pub struct Served {
    pub path: String,
    pub agent: Option<String>,
    pub is_subagent: bool,
    pub step: usize,
    pub attempt: u32,
    pub status: u16,
    pub requested_model: Option<String>,
    /// The model the answer named.
    pub model: Option<String>,
    pub message_id: Option<String>,
    pub request_id: Option<String>,
    pub usage: Option<Usage>,
    /// Whether the whole stream went out (false when the client hung up, e.g. on SIGINT).
    pub completed: bool,
}

impl Served {
    /// A request not answered yet: 404 until it is.
    fn of(path: String) -> Self {
        Self {
            path,
            agent: None,
            is_subagent: false,
            step: 0,
            attempt: 0,
            status: 404,
            requested_model: None,
            model: None,
            message_id: None,
            request_id: None,
            usage: None,
            completed: true,
        }
    }
}

type Log = Arc<Mutex<Vec<Served>>>;
/// Attempts so far per (agent marker, is a sub-agent, step).
type Attempts = HashMap<(Option<String>, bool, usize), u32>;

struct Shared {
    script: Box<dyn Script>,
    log: Log,
    attempts: Mutex<Attempts>,
    streaming: watch::Sender<u32>,
}

pub struct MockAnthropic {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: JoinHandle<()>,
}

impl MockAnthropic {
    /// Binds 127.0.0.1 on a free port (never a fixed one: tests run in parallel).
    pub async fn start(script: impl Script) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            script: Box::new(script),
            log: Arc::default(),
            attempts: Mutex::default(),
            streaming: watch::channel(0).0,
        });
        let s = Arc::clone(&shared);
        let accept = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let s = Arc::clone(&s);
                tokio::spawn(async move {
                    // A connection error only ends that connection; the CLI retries or reports it itself.
                    let _ = serve_connection(stream, &s).await;
                });
            }
        });
        Ok(Self { addr, shared, accept })
    }

    /// `ANTHROPIC_BASE_URL` for the CLI.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn served(&self) -> Vec<Served> {
        self.shared.log.lock().expect("mock log poisoned").clone()
    }

    /// Counts the signalled answers that have started streaming; `changed()` wakes a waiting test.
    pub fn streaming(&self) -> watch::Receiver<u32> {
        self.shared.streaming.subscribe()
    }
}

impl Drop for MockAnthropic {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

async fn serve_connection(stream: TcpStream, shared: &Shared) -> std::io::Result<()> {
    let (read, mut write) = stream.into_split();
    let mut read = tokio::io::BufReader::new(read);
    while let Some(req) = read_request(&mut read).await? {
        let close = req.header("connection").is_some_and(|v| v.eq_ignore_ascii_case("close"));
        if !handle(&req, &mut write, shared).await? || close {
            // A streamed answer ends with the connection (`connection: close`), as the reference mock does.
            break;
        }
    }
    write.shutdown().await
}

/// Serves one request; `false` when the connection must close after it.
async fn handle<W: AsyncWriteExt + Unpin>(req: &Request, write: &mut W, shared: &Shared) -> std::io::Result<bool> {
    let path = req.path.split('?').next().unwrap_or_default().to_owned();
    let mut served = Served::of(req.path.clone());
    let log = |s: Served| {
        let mut l = shared.log.lock().expect("mock log poisoned");
        l.push(s);
        l.len() - 1
    };
    if req.method != "POST" || !(path == "/v1/messages" || path == "/v1/messages/count_tokens") {
        log(served);
        let body = json!({"type": "error", "error": {"type": "not_found_error", "message": "not served by the swarmtop test mock"}});
        write_json(write, 404, &body, &[]).await?;
        return Ok(true);
    }
    let Ok(body) = serde_json::from_slice::<Value>(&req.body) else {
        served.status = 400;
        log(served);
        let body = json!({"type": "error", "error": {"type": "invalid_request_error", "message": "mock could not decode the body"}});
        write_json(write, 400, &body, &[]).await?;
        return Ok(true);
    };
    if path.ends_with("/count_tokens") {
        served.status = 200;
        log(served);
        write_json(write, 200, &json!({"input_tokens": 1234}), &[]).await?;
        return Ok(true);
    }
    let mreq = MessagesRequest::read(&body, &shared.attempts);
    let MessagesRequest { ref agent, is_subagent, step, model: ref requested_model, attempt, .. } = mreq;
    let (agent, requested_model) = (agent.clone(), requested_model.clone());
    let label = format!("{}_{}{step}", agent.as_deref().unwrap_or("side"), if is_subagent { "s" } else { "" });
    let request_id = format!("req_{label}_{attempt}");
    served.agent = agent;
    served.is_subagent = is_subagent;
    served.step = step;
    served.attempt = attempt;
    served.requested_model.clone_from(&requested_model);
    served.request_id = Some(request_id.clone());
    match shared.script.reply(&mreq) {
        Reply::Error { status, kind, message } => {
            served.status = status;
            log(served);
            let body = json!({"type": "error", "error": {"type": kind, "message": message}});
            write_json(write, status, &body, &[("request-id", &request_id), ("x-should-retry", "true")]).await?;
            Ok(true)
        }
        Reply::Message { blocks, stop, usage, model, pre_delay, delta_delay, signal } => {
            let model = model.or(requested_model).unwrap_or_else(|| "claude-sonnet-4-5".to_owned());
            let message_id = format!("msg_{label}");
            served.status = 200;
            served.model = Some(model.clone());
            served.message_id = Some(message_id.clone());
            served.usage = Some(usage);
            served.completed = false;
            // Logged before streaming: the CLI may act on the answer before this task runs again.
            let at = log(served);
            tokio::time::sleep(pre_delay).await;
            let answer = Answer { id: &message_id, model: &model, blocks: &blocks, stop, usage };
            if body.get("stream").and_then(Value::as_bool) != Some(true) {
                write_json(write, 200, &answer.whole(), &[("request-id", &request_id)]).await?;
                shared.log.lock().expect("mock log poisoned")[at].completed = true;
                return Ok(true);
            }
            let signal = signal.then_some(&shared.streaming);
            let done = answer.stream(write, &request_id, delta_delay, signal).await.is_ok();
            shared.log.lock().expect("mock log poisoned")[at].completed = done;
            Ok(false)
        }
    }
}

struct Answer<'a> {
    id: &'a str,
    model: &'a str,
    blocks: &'a [Block],
    stop: &'static str,
    usage: Usage,
}

impl Answer<'_> {
    fn whole(&self) -> Value {
        let content: Vec<Value> = self
            .blocks
            .iter()
            .map(|b| match b {
                Block::Text(t) => json!({"type": "text", "text": t}),
                Block::Thinking(t) => json!({"type": "thinking", "thinking": t, "signature": signature(t)}),
                Block::ToolUse { id, name, input } => {
                    json!({"type": "tool_use", "id": id, "name": name, "input": input})
                }
            })
            .collect();
        json!({"id": self.id, "type": "message", "role": "assistant", "model": self.model, "content": content,
               "stop_reason": self.stop, "stop_sequence": null, "usage": self.usage.to_json(self.usage.output)})
    }

    /// Every server-sent event of the answer, in order, each with whether the stream pauses after it
    /// (the deltas, as a real model streams them).
    fn events(&self) -> Vec<(Value, bool)> {
        let mut out = vec![
            (
                json!({"type": "message_start", "message": {"id": self.id, "type": "message", "role": "assistant",
                "model": self.model, "content": [], "stop_reason": null, "stop_sequence": null,
                "usage": self.usage.to_json(1)}}),
                false,
            ),
            (json!({"type": "ping"}), false),
        ];
        for (index, block) in self.blocks.iter().enumerate() {
            out.extend(block_events(index, block));
            out.push((json!({"type": "content_block_stop", "index": index}), false));
        }
        out.push((
            json!({"type": "message_delta", "delta": {"stop_reason": self.stop, "stop_sequence": null},
            "usage": {"output_tokens": self.usage.output}}),
            false,
        ));
        out.push((json!({"type": "message_stop"}), false));
        out
    }

    async fn stream<W: AsyncWriteExt + Unpin>(
        &self,
        write: &mut W,
        request_id: &str,
        delay: Duration,
        signal: Option<&watch::Sender<u32>>,
    ) -> std::io::Result<()> {
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\ncache-control: no-cache\r\n\
             request-id: {request_id}\r\nconnection: close\r\n\r\n"
        );
        write.write_all(head.as_bytes()).await?;
        let mut deltas = 0u32;
        for (data, pause) in self.events() {
            let kind = data["type"].as_str().unwrap_or("message").to_owned();
            write.write_all(format!("event: {kind}\ndata: {data}\n\n").as_bytes()).await?;
            write.flush().await?;
            if pause {
                deltas += 1;
                if deltas == 3
                    && let Some(s) = signal
                {
                    s.send_modify(|n| *n += 1);
                }
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
            }
        }
        write.flush().await
    }
}

/// One content block's start and deltas: text three words at a time, thinking then its signature,
/// a tool call's input in pieces of 40 characters.
fn block_events(index: usize, block: &Block) -> Vec<(Value, bool)> {
    let start =
        |content: Value| (json!({"type": "content_block_start", "index": index, "content_block": content}), false);
    let delta =
        |delta: Value, pause: bool| (json!({"type": "content_block_delta", "index": index, "delta": delta}), pause);
    match block {
        Block::Text(text) => std::iter::once(start(json!({"type": "text", "text": ""})))
            .chain(
                word_chunks(text, 3).into_iter().map(|chunk| delta(json!({"type": "text_delta", "text": chunk}), true)),
            )
            .collect(),
        Block::Thinking(text) => vec![
            start(json!({"type": "thinking", "thinking": "", "signature": ""})),
            delta(json!({"type": "thinking_delta", "thinking": text}), true),
            delta(json!({"type": "signature_delta", "signature": signature(text)}), false),
        ],
        Block::ToolUse { id, name, input } => {
            let chars: Vec<char> = input.to_string().chars().collect();
            std::iter::once(start(json!({"type": "tool_use", "id": id, "name": name, "input": {}})))
                .chain(chars.chunks(40).map(|part| {
                    delta(json!({"type": "input_json_delta", "partial_json": part.iter().collect::<String>()}), true)
                }))
                .collect()
        }
    }
}
/// Splits text into chunks of `n` words, keeping the spaces, so the deltas add up to the text exactly.
fn word_chunks(text: &str, n: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut words = 0;
    for piece in text.split_inclusive(' ') {
        cur.push_str(piece);
        words += 1;
        if words == n {
            out.push(std::mem::take(&mut cur));
            words = 0;
        }
    }
    if !cur.is_empty() || out.is_empty() {
        out.push(cur);
    }
    out
}

fn signature(text: &str) -> String {
    format!(
        "sig_{:x}",
        text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
    )
}

async fn write_json<W: AsyncWriteExt + Unpin>(
    write: &mut W,
    status: u16,
    body: &Value,
    headers: &[(&str, &str)],
) -> std::io::Result<()> {
    let body = body.to_string();
    let mut head = format!(
        "HTTP/1.1 {status} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
        reason(status),
        body.len()
    );
    for (k, v) in headers {
        head.push_str(k);
        head.push_str(": ");
        head.push_str(v);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    write.write_all(head.as_bytes()).await?;
    write.write_all(body.as_bytes()).await?;
    write.flush().await
}

/// The text of the first user message (content as a string or as text blocks).
fn first_user_text(messages: &[Value]) -> Option<String> {
    let m = messages.iter().find(|m| m.get("role").and_then(Value::as_str) == Some("user"))?;
    Some(match m.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    })
}

fn system_text(system: Option<&Value>) -> String {
    match system {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => {
            blocks.iter().filter_map(|b| b.get("text").and_then(Value::as_str)).collect::<Vec<_>>().join("\n")
        }
        _ => String::new(),
    }
}

/// `[[agent:NAME]]` → `NAME` (letters, digits, `_`, `-`).
pub fn marker(text: &str) -> Option<String> {
    let start = text.find("[[agent:")? + "[[agent:".len();
    let len = text[start..].find("]]")?;
    let tag = &text[start..start + len];
    (!tag.is_empty() && tag.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'))
        .then(|| tag.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    struct Echo;
    impl Script for Echo {
        fn reply(&self, req: &MessagesRequest<'_>) -> Reply {
            if req.agent.as_deref() == Some("bad") {
                return Reply::Error { status: 529, kind: "overloaded_error", message: "Overloaded" };
            }
            Reply::Message {
                blocks: vec![Block::Text(format!(
                    "hello {} at step {}",
                    req.agent.as_deref().unwrap_or("?"),
                    req.step
                ))],
                stop: "end_turn",
                usage: Usage { input: 10, cache_write_5m: 2, cache_write_1h: 1, cache_read: 30, output: 4 },
                model: None,
                pre_delay: Duration::ZERO,
                delta_delay: Duration::ZERO,
                signal: false,
            }
        }
    }

    async fn exchange(addr: &str, body: &str) -> String {
        let mut s = TcpStream::connect(addr).await.expect("connect");
        let req = format!(
            "POST /v1/messages?beta=true HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        s.write_all(req.as_bytes()).await.expect("write");
        let mut out = String::new();
        s.read_to_string(&mut out).await.expect("read");
        out
    }

    #[tokio::test]
    async fn streams_the_messages_api_events_and_counts_attempts() {
        let mock = MockAnthropic::start(Echo).await.expect("mock");
        let addr = mock.base_url().trim_start_matches("http://").to_owned();
        let body = r#"{"model":"claude-sonnet-4-5","stream":true,"system":[{"type":"text","text":"x; cc_is_subagent=true;\nrest"}],
            "messages":[{"role":"user","content":[{"type":"text","text":"[[agent:A]] go"}]},{"role":"assistant","content":"x"}]}"#;
        let sse = exchange(&addr, body).await;
        assert!(sse.starts_with("HTTP/1.1 200 OK\r\n") && sse.contains("request-id: req_A_s1_1\r\n"), "{sse}");
        for ev in [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ] {
            assert!(sse.contains(&format!("event: {ev}\n")), "{ev} missing in {sse}");
        }
        assert!(sse.contains(r#""output_tokens":1"#) && sse.contains(r#""usage":{"output_tokens":4}"#));
        let bad = r#"{"model":"m","stream":true,"messages":[{"role":"user","content":"[[agent:bad]]"}]}"#;
        assert!(exchange(&addr, bad).await.starts_with("HTTP/1.1 529 Overloaded\r\n"));
        assert!(exchange(&addr, bad).await.contains("request-id: req_bad_0_2\r\n"));
        let served = mock.served();
        assert_eq!(served.len(), 3);
        assert_eq!((served[0].agent.as_deref(), served[0].is_subagent, served[0].step), (Some("A"), true, 1));
        assert!(served[0].completed);
        assert_eq!((served[2].status, served[2].attempt), (529, 2));
    }

    #[test]
    fn word_chunks_add_up_to_the_text() {
        let t = "one two three four five six seven";
        assert_eq!(word_chunks(t, 3).concat(), t);
        assert_eq!(word_chunks("", 3), vec![String::new()]);
    }
}
