//! The acting side of a tee's socket: watch the session as any monitor does (history, then live
//! records, into a pipeline of our own), and ask the tee to write requests into it (`recording.md`,
//! "Acting through the tee"). Only a socket of ours, served by a process of ours, is used.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};

use super::control::TeeRequest;
use crate::pipeline::{Config, Pipeline};
use crate::source::files::{self, Record};
use crate::source::socket;
use crate::wire::{Clean, Origin};

/// What the tee said about a request of ours.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// Written into the session, with this id.
    Acted {
        tag: u64,
        request_id: String,
    },
    /// The session's answer to it.
    Answer {
        tag: u64,
        msg: Value,
    },
    Refused {
        tag: u64,
        error: String,
    },
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Marker {
    swarmtop: String,
    #[serde(default)]
    tag: Option<u64>,
    #[serde(default)]
    request_id: Option<String>,
    #[serde(default)]
    msg: Option<Value>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    exit_code: Option<i32>,
}

pub struct TeeSession {
    pub path: PathBuf,
    read: BufReader<OwnedReadHalf>,
    write: OwnedWriteHalf,
    pub pipeline: Pipeline,
    /// The proxied command exited (the tee's `end` marker), with this status.
    pub ended: Option<i32>,
    /// The tee's own pid (the socket's peer).
    pub pid: Option<u32>,
    next_tag: u64,
    line: Vec<u8>,
}

impl TeeSession {
    /// Connects and reads the session's history into a pipeline, up to the `live` marker.
    pub async fn open(path: &Path, config: Config) -> Result<Self, String> {
        let shown = Clean::path(path);
        socket::check_socket(path).map_err(|e| format!("{shown}: {e}"))?;
        let stream = UnixStream::connect(path).await.map_err(|e| format!("connecting to {shown}: {e}"))?;
        socket::check_peer(&stream).map_err(|e| format!("refusing {shown}: {e}"))?;
        let pid = socket::peer_pid(&stream);
        let (read, write) = stream.into_split();
        let mut session = Self {
            path: path.to_owned(),
            read: BufReader::new(read),
            write,
            pipeline: Pipeline::new(config),
            ended: None,
            pid,
            next_tag: 1,
            line: Vec::new(),
        };
        loop {
            match session.read_line().await? {
                Line::Live | Line::Ended => return Ok(session),
                Line::Record | Line::Reply(_) => {}
            }
        }
    }

    /// Asks the tee to write `request` into the session, recorded as `act`; returns the tag that
    /// the tee's replies about it carry.
    pub async fn ask(&mut self, request: &TeeRequest, act: Value) -> Result<u64, String> {
        let tag = self.next_tag;
        self.next_tag += 1;
        let line = json!({"swarmtop": "act", "tag": tag, "act": act, "send": request.send,
                          "idAt": request.id_at, "answerAt": request.answer_at});
        let mut bytes = line.to_string().into_bytes();
        bytes.push(b'\n');
        self.write.write_all(&bytes).await.map_err(|e| format!("writing to {}: {e}", Clean::path(&self.path)))?;
        Ok(tag)
    }

    /// Reads what comes next: a record of the session (applied to the pipeline), a reply of the
    /// tee's, or the end. Cancel-safe: a read dropped half-way through a line goes on from there.
    pub async fn next(&mut self) -> Result<Line, String> {
        self.read_line().await
    }

    async fn read_line(&mut self) -> Result<Line, String> {
        let shown = || Clean::path(&self.path);
        // A read cut short (a guard's timeout around `next`) left the start of its line here.
        if self.line.last() == Some(&b'\n') {
            self.line.clear();
        }
        let n = self.read.read_until(b'\n', &mut self.line).await.map_err(|e| format!("reading {}: {e}", shown()))?;
        if n == 0 {
            self.ended.get_or_insert(-1);
            return Ok(Line::Ended);
        }
        let line = self.line.strip_suffix(b"\n").unwrap_or(&self.line);
        if line.starts_with(b"{\"swarmtop\":\"") && !line.starts_with(b"{\"swarmtop\":\"recording\"") {
            let Ok(m) = serde_json::from_slice::<Marker>(line) else { return Ok(Line::Record) };
            let tag = m.tag.unwrap_or_default();
            return match m.swarmtop.as_str() {
                "live" => Ok(Line::Live),
                "end" => {
                    self.ended = Some(m.exit_code.unwrap_or(-1));
                    Ok(Line::Ended)
                }
                "lagged" => Err(format!("{} dropped us for falling behind; try again", shown())),
                "acted" => Ok(Line::Reply(Reply::Acted { tag, request_id: m.request_id.unwrap_or_default() })),
                "answer" => Ok(Line::Reply(Reply::Answer { tag, msg: m.msg.unwrap_or_default() })),
                "refused" => Ok(Line::Reply(Reply::Refused { tag, error: m.error.unwrap_or_default() })),
                _ => Ok(Line::Record),
            };
        }
        let record = if line.len() > files::MAX_LINE {
            Record::TooLong { len: line.len(), head: &line[..files::HEAD] }
        } else {
            Record::Line(line)
        };
        self.pipeline.feed(record, &Origin::NONE, &mut |_: &crate::router::Event<'_, '_>| {});
        Ok(Line::Record)
    }
}

/// One line from the tee.
#[derive(Debug)]
pub enum Line {
    /// A record of the session, applied to the pipeline.
    Record,
    /// History is over; what follows is live.
    Live,
    /// The session ended (or the tee went away).
    Ended,
    Reply(Reply),
}
