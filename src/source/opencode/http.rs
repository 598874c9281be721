//! A small HTTP/1.1 client for `opencode serve` (loopback, plain HTTP: the server has no TLS):
//! one GET per connection, every read bounded. A response head's lines, a chunk's size line and a
//! body read whole are each bounded; what passes a line bound is skipped and counted, a head that
//! never ends is refused (issue 22 item 3: an endless header line grew memory ~400 MB/s).

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use crate::source::sse::read_line;
use crate::wire::sanitize_line;

/// How long `opencode serve` may take to answer a request's head (per read).
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(5);
/// Silence on an event stream after which its connection counts as dropped (three heartbeats).
pub const SSE_SILENCE: Duration = Duration::from_secs(35);
/// How long a probe of a listening socket may take to answer.
const PROBE_TIMEOUT: Duration = Duration::from_millis(800);
/// Longest header line kept; a longer one is skipped (and counted in [`Head::skipped`]).
pub const MAX_HEADER_LINE: usize = 8 << 10;
/// Longest response head read: one longer has no body worth waiting for, and is refused.
pub const MAX_HEAD: usize = 256 << 10;
/// Longest chunk-size line (hex digits and extensions) of a chunked body.
const MAX_CHUNK_LINE: usize = 1 << 10;
/// What the event stream is asked for.
pub const EVENT_STREAM: &str = "text/event-stream";
/// What the API is asked for.
pub const JSON: &str = "application/json";

/// `opencode serve`'s address as the command line names it: `http://HOST:PORT`.
pub fn server_of(input: &str) -> Option<String> {
    let rest = input.strip_prefix("http://")?;
    let authority = rest.split('/').next().filter(|a| !a.is_empty())?;
    Some(authority.to_owned())
}

fn trim(line: &[u8]) -> &[u8] {
    line.trim_ascii()
}

/// A response head, as far as this client needs it.
#[derive(Debug, Default)]
pub struct Head {
    chunked: bool,
    length: Option<u64>,
    pub json: bool,
    /// Header lines over [`MAX_HEADER_LINE`], skipped.
    pub skipped: usize,
}

/// Reads a response head after its status line; an error when it passes [`MAX_HEAD`].
fn read_head(r: &mut dyn BufRead, mut used: usize) -> io::Result<Head> {
    let mut head = Head::default();
    let mut line = Vec::new();
    loop {
        let left = MAX_HEAD.saturating_sub(used);
        let got = read_line(r, MAX_HEADER_LINE, left, &mut line).map_err(|e| match e.kind() {
            io::ErrorKind::InvalidData => {
                io::Error::new(io::ErrorKind::InvalidData, format!("a response head over {MAX_HEAD} bytes"))
            }
            _ => e,
        })?;
        used += got.consumed;
        if got.consumed == 0 || trim(&line).is_empty() {
            return Ok(head);
        }
        if got.cut {
            head.skipped += 1;
            continue;
        }
        let Some(colon) = memchr::memchr(b':', &line) else { continue };
        let (name, value) = (trim(&line[..colon]), trim(&line[colon + 1..]));
        if name.eq_ignore_ascii_case(b"transfer-encoding") {
            head.chunked |= value.eq_ignore_ascii_case(b"chunked");
        } else if name.eq_ignore_ascii_case(b"content-length") {
            head.length = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok());
        } else if name.eq_ignore_ascii_case(b"content-type") {
            head.json |= memchr::memmem::find(value, JSON.as_bytes()).is_some();
        }
    }
}

/// A response: its head, and its body as plain bytes.
pub struct Response {
    pub head: Head,
    pub body: Box<dyn BufRead + Send>,
}

fn connect(authority: &str, timeout: Duration) -> io::Result<TcpStream> {
    let mut last = io::Error::new(io::ErrorKind::NotFound, format!("no address for {authority}"));
    for addr in authority.to_socket_addrs()? {
        match TcpStream::connect_timeout(&addr, timeout) {
            Ok(s) => return Ok(s),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// Sends a GET and reads the response head; the body follows in the response. Anything but 200
/// is an error naming the status line (sanitised: it is the server's text, and it is shown).
pub fn get(authority: &str, path: &str, accept: &str) -> io::Result<Response> {
    request(connect(authority, HEAD_TIMEOUT)?, authority, path, accept, HEAD_TIMEOUT)
}

fn request(stream: TcpStream, authority: &str, path: &str, accept: &str, timeout: Duration) -> io::Result<Response> {
    // A server still starting may accept and not answer: the head must come in time.
    stream.set_read_timeout(Some(timeout))?;
    let mut w = stream.try_clone()?;
    write!(w, "GET {path} HTTP/1.1\r\nHost: {authority}\r\nAccept: {accept}\r\nConnection: close\r\n\r\n")?;
    w.flush()?;
    let mut r = BufReader::new(stream);
    let mut status = Vec::new();
    let got = read_line(&mut r, MAX_HEADER_LINE, MAX_HEAD, &mut status)?;
    let status = String::from_utf8_lossy(trim(&status)).into_owned();
    if status.split_whitespace().nth(1) != Some("200") {
        let shown = if got.consumed == 0 { "no answer".to_owned() } else { sanitize_line(&status).to_string() };
        return Err(io::Error::other(format!("GET http://{authority}{path}: {shown}")));
    }
    let head = read_head(&mut r, got.consumed)?;
    if accept == EVENT_STREAM {
        // Events come when they come, but a heartbeat every 10 s: silence this long is a dead link.
        w.set_read_timeout(Some(SSE_SILENCE))?;
    }
    // The server may keep the connection open whatever we ask: a body ends by its length.
    let body: Box<dyn BufRead + Send> = match (head.chunked, head.length) {
        (true, _) => Box::new(BufReader::new(Chunked { inner: r, left: 0, done: false, line: Vec::new() })),
        (false, Some(n)) => Box::new(r.take(n)),
        (false, None) => Box::new(r),
    };
    Ok(Response { head, body })
}

/// Whether an OpenCode server answers at `authority`: `GET /session/status` gives JSON.
pub fn probe(authority: &str) -> bool {
    let Ok(addr) = authority.parse::<SocketAddr>() else { return false };
    let Ok(stream) = TcpStream::connect_timeout(&addr, PROBE_TIMEOUT) else { return false };
    request(stream, authority, "/session/status", JSON, PROBE_TIMEOUT).is_ok_and(|r| r.head.json)
}

/// A body in HTTP/1.1 chunked transfer coding, as the plain bytes it carries.
struct Chunked<R> {
    inner: R,
    left: usize,
    done: bool,
    line: Vec<u8>,
}

impl<R: BufRead> Read for Chunked<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.done {
            return Ok(0);
        }
        if self.left == 0 {
            // The CRLF that ends the previous chunk, then the size line.
            loop {
                let got = read_line(&mut self.inner, MAX_CHUNK_LINE, usize::MAX, &mut self.line)?;
                if got.consumed == 0 {
                    return Ok(0);
                }
                if got.cut {
                    return Err(io::Error::new(io::ErrorKind::InvalidData, "a chunk size line over its bound"));
                }
                if !trim(&self.line).is_empty() {
                    break;
                }
            }
            let size = trim(&self.line).split(|&b| b == b';').next().unwrap_or_default();
            let size = std::str::from_utf8(trim(size)).ok().and_then(|s| usize::from_str_radix(s, 16).ok());
            self.left =
                size.ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "a chunk size that is no number"))?;
            if self.left == 0 {
                self.done = true;
                return Ok(0);
            }
        }
        let n = out.len().min(self.left);
        let n = self.inner.read(&mut out[..n])?;
        if n == 0 {
            // Ended inside a chunk: what came is all there is.
            self.done = true;
        }
        self.left -= n;
        Ok(n)
    }
}

/// A body read whole (a JSON answer), cut at `max` bytes: reading past it is an error, and
/// [`Limited::cut`] says so afterwards.
pub(super) struct Limited<R> {
    inner: R,
    left: usize,
    pub cut: bool,
}

impl<R: Read> Limited<R> {
    pub fn new(inner: R, max: usize) -> Self {
        Self { inner, left: max, cut: false }
    }
}

impl<R: Read> Read for Limited<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.left == 0 {
            // At the bound: the end of the body, or the cut.
            if out.is_empty() || self.inner.read(&mut [0u8; 1])? == 0 {
                return Ok(0);
            }
            self.cut = true;
            return Err(io::Error::new(io::ErrorKind::InvalidData, "a response over its bound"));
        }
        let n = out.len().min(self.left);
        let n = self.inner.read(&mut out[..n])?;
        self.left -= n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunked_body_and_its_hostile_size_lines() {
        let body: &[u8] = b"4\r\nabcd\r\n3;ext=1\r\nefg\r\n0\r\n\r\n";
        let mut out = String::new();
        Chunked { inner: body, left: 0, done: false, line: Vec::new() }.read_to_string(&mut out).unwrap();
        assert_eq!(out, "abcdefg");
        for bad in [&b"zz\r\n"[..], b"ffffffffffffffffffffffff\r\n", &[b'1'; 4096]] {
            let mut sink = Vec::new();
            let r = Chunked { inner: bad, left: 0, done: false, line: Vec::new() }.read_to_end(&mut sink);
            assert!(r.is_err(), "{:?}", String::from_utf8_lossy(&bad[..bad.len().min(20)]));
        }
    }

    #[test]
    fn a_limited_body_says_when_it_was_cut() {
        let mut l = Limited::new(&b"12345"[..], 5);
        let mut s = String::new();
        l.read_to_string(&mut s).unwrap();
        assert!(!l.cut);
        let mut l = Limited::new(&b"123456"[..], 5);
        assert!(l.read_to_string(&mut s).is_err());
        assert!(l.cut);
    }
}
