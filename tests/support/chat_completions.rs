//! A loopback mock of the OpenAI Chat Completions API (`POST /v1/chat/completions`, streaming SSE),
//! just enough for OpenCode 1.18.33's `@ai-sdk/openai-compatible` provider.
//!
//! An agent is told apart by a `[[AGENT:<label>]]` tag in its first user message (none: the root; no
//! tools and a title-writing system prompt: a title request), its step by how many assistant
//! messages the conversation already holds, so the mock needs no memory of earlier requests. What
//! to answer is a [`Script`]; this file knows HTTP/1.1, SSE and the shape of a chunk stream (text
//! deltas, tool-call deltas, a final `usage` chunk). Failures carry `retry-after-ms`, which OpenCode
//! honours, so its five retries take milliseconds, not its default back-off.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// A provider usage as the Chat Completions API states it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub prompt: u64,
    pub cached: u64,
    pub completion: u64,
    pub reasoning: u64,
}

/// One tool call the model asks for.
#[derive(Clone, Debug)]
pub struct Call {
    pub id: String,
    pub name: String,
    pub arguments: Value,
}

/// What the mock answers one request with.
#[derive(Clone, Debug)]
pub enum Reply {
    /// Text (streamed in `pieces`, `delay` apart) then tool calls, then usage.
    Stream { text: String, calls: Vec<Call>, usage: Usage, pieces: usize, delay: Duration },
    /// An HTTP error, with `retry-after-ms: 0`.
    Error { status: u16 },
    /// `word `, one every `every`, until `gate` opens (or `max` has passed), then usage: an agent
    /// that runs for as long as the test needs to see it run, however slow the machine.
    Until { gate: Arc<AtomicBool>, every: Duration, max: Duration, usage: Usage },
}

/// One request as the script sees it.
pub struct Request<'a> {
    pub agent: String,
    pub step: usize,
    pub tools: Vec<String>,
    pub body: &'a Value,
}

pub trait Script: Send + Sync + 'static {
    fn reply(&self, req: &Request<'_>) -> Reply;
}

/// What was served, for the test's assertions.
#[derive(Clone, Debug)]
pub struct Served {
    pub agent: String,
    pub step: usize,
    pub status: u16,
    pub usage: Option<Usage>,
}

pub struct MockChat {
    addr: SocketAddr,
    served: Arc<Mutex<Vec<Served>>>,
}

impl MockChat {
    /// Binds 127.0.0.1 on a free port; serves on threads until the process ends.
    pub fn start(script: impl Script) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0))?;
        let addr = listener.local_addr()?;
        let served = Arc::new(Mutex::new(Vec::new()));
        let script: Arc<dyn Script> = Arc::new(script);
        let log = Arc::clone(&served);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (script, log) = (Arc::clone(&script), Arc::clone(&log));
                std::thread::spawn(move || {
                    let _ = serve(stream, script.as_ref(), &log);
                });
            }
        });
        Ok(Self { addr, served })
    }

    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn served(&self) -> Vec<Served> {
        self.served.lock().expect("mock log poisoned").clone()
    }
}

fn text_of(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => {
            parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect::<Vec<_>>().join("\n")
        }
        _ => String::new(),
    }
}

/// Who asks, and at which step.
pub fn classify(body: &Value) -> (String, usize, Vec<String>) {
    let msgs = body.get("messages").and_then(Value::as_array).cloned().unwrap_or_default();
    let role = |m: &Value, r: &str| m.get("role").and_then(Value::as_str) == Some(r);
    let tools: Vec<String> = body
        .get("tools")
        .and_then(Value::as_array)
        .map(|ts| {
            ts.iter().filter_map(|t| t.pointer("/function/name").and_then(Value::as_str).map(str::to_owned)).collect()
        })
        .unwrap_or_default();
    let system: String = msgs.iter().filter(|m| role(m, "system")).map(|m| text_of(m.get("content"))).collect();
    let first_user = msgs.iter().find(|m| role(m, "user")).map(|m| text_of(m.get("content"))).unwrap_or_default();
    let step = msgs.iter().filter(|m| role(m, "assistant")).count();
    let lower = system.to_lowercase();
    if tools.is_empty() && lower.contains("title") && lower.contains("generat") {
        return ("title".to_owned(), step, tools);
    }
    let agent = first_user
        .split("[[AGENT:")
        .nth(1)
        .and_then(|rest| rest.split("]]").next())
        .map_or_else(|| "root".to_owned(), str::to_owned);
    (agent, step, tools)
}

struct Http {
    path: String,
    body: Vec<u8>,
}

fn read_request(read: &mut impl BufRead) -> std::io::Result<Option<Http>> {
    let mut line = String::new();
    if read.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let path = line.split_whitespace().nth(1).unwrap_or_default().to_owned();
    let mut len = 0;
    loop {
        line.clear();
        if read.read_line(&mut line)? == 0 {
            return Ok(None);
        }
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            if k.trim().eq_ignore_ascii_case("content-length") {
                len = v.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0; len];
    read.read_exact(&mut body)?;
    Ok(Some(Http { path, body }))
}

fn chunk(model: &str, delta: &Value, finish: Option<&str>) -> Value {
    json!({"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 1_700_000_000, "model": model,
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

fn serve(stream: TcpStream, script: &dyn Script, log: &Mutex<Vec<Served>>) -> std::io::Result<()> {
    let mut write = stream.try_clone()?;
    let mut read = BufReader::new(stream);
    // One request per connection (`connection: close`): the client opens a new one each time.
    let Some(req) = read_request(&mut read)? else { return Ok(()) };
    let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
    if !req.path.ends_with("/chat/completions") {
        let msg = b"{\"error\":{\"message\":\"not served by the swarmtop test mock\"}}";
        let head = format!(
            "HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            msg.len()
        );
        write.write_all(head.as_bytes())?;
        return write.write_all(msg);
    }
    let (agent, step, tools) = classify(&body);
    let reply = script.reply(&Request { agent: agent.clone(), step, tools, body: &body });
    let model = body.get("model").and_then(Value::as_str).unwrap_or("mock").to_owned();
    match reply {
        Reply::Error { status } => {
            log.lock().expect("mock log poisoned").push(Served { agent, step, status, usage: None });
            let msg = br#"{"error":{"message":"mock: internal server error (scripted)","type":"server_error"}}"#;
            let head = format!(
                "HTTP/1.1 {status} Internal Server Error\r\ncontent-type: application/json\r\nretry-after-ms: 0\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                msg.len()
            );
            write.write_all(head.as_bytes())?;
            write.write_all(msg)
        }
        Reply::Stream { text, calls, usage, pieces, delay } => {
            log.lock().expect("mock log poisoned").push(Served { agent, step, status: 200, usage: Some(usage) });
            let mut sse = start_stream(&mut write, &model)?;
            let words: Vec<&str> = text.split_inclusive(' ').collect();
            for piece in words.chunks(words.len().div_ceil(pieces.max(1)).max(1)) {
                sse.send(&chunk(&model, &json!({"content": piece.concat()}), None))?;
                std::thread::sleep(delay);
            }
            finish_stream(sse, &model, &calls, usage)
        }
        Reply::Until { gate, every, max, usage } => {
            log.lock().expect("mock log poisoned").push(Served { agent, step, status: 200, usage: Some(usage) });
            let mut sse = start_stream(&mut write, &model)?;
            let started = Instant::now();
            while !gate.load(Ordering::SeqCst) && started.elapsed() < max {
                sse.send(&chunk(&model, &json!({"content": "word "}), None))?;
                std::thread::sleep(every);
            }
            finish_stream(sse, &model, &[], usage)
        }
    }
}

/// A streamed answer being written: each chunk an SSE event.
struct Sse<'w>(&'w mut TcpStream);

impl Sse<'_> {
    fn send(&mut self, v: &Value) -> std::io::Result<()> {
        self.0.write_all(format!("data: {v}\n\n").as_bytes())?;
        self.0.flush()
    }
}

/// The head of a streamed answer and its first chunk.
fn start_stream<'w>(write: &'w mut TcpStream, model: &str) -> std::io::Result<Sse<'w>> {
    write.write_all(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n",
    )?;
    let mut sse = Sse(write);
    sse.send(&chunk(model, &json!({"role": "assistant", "content": ""}), None))?;
    Ok(sse)
}

/// The tool calls, the finish reason and the usage that end a streamed answer.
fn finish_stream(mut sse: Sse<'_>, model: &str, calls: &[Call], usage: Usage) -> std::io::Result<()> {
    for (i, c) in calls.iter().enumerate() {
        let args = c.arguments.to_string();
        let (a, b) = args.split_at(args.len() / 2);
        sse.send(&chunk(
            model,
            &json!({"tool_calls": [{"index": i, "id": c.id, "type": "function", "function": {"name": c.name, "arguments": a}}]}),
            None,
        ))?;
        sse.send(&chunk(model, &json!({"tool_calls": [{"index": i, "function": {"arguments": b}}]}), None))?;
    }
    let finish = if calls.is_empty() { "stop" } else { "tool_calls" };
    sse.send(&chunk(model, &json!({}), Some(finish)))?;
    sse.send(&json!({"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 1_700_000_000,
                     "model": model, "choices": [],
                     "usage": {"prompt_tokens": usage.prompt, "completion_tokens": usage.completion,
                               "total_tokens": usage.prompt + usage.completion,
                               "prompt_tokens_details": {"cached_tokens": usage.cached},
                               "completion_tokens_details": {"reasoning_tokens": usage.reasoning}}}))?;
    sse.0.write_all(b"data: [DONE]\n\n")?;
    sse.0.flush()
}
