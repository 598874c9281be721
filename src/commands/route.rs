//! `swarmtop route [--all]`: the routed stream as NDJSON (routing.md §7).

use std::io::{BufWriter, Write};
use std::process::ExitCode;
use std::sync::Arc;

use color_eyre::eyre::Result;
use serde::Serialize;
use serde_json::value::RawValue;

use super::cli::RouteArgs;
use super::ingest::ingest_until;
use crate::pipeline::Config;
use crate::router::{Class, Event, Sink, ThreadIdx};

pub fn run(args: &RouteArgs, config: Config) -> Result<ExitCode> {
    let stdout = std::io::stdout().lock();
    let mut writer = RouteWriter { all: args.all, ids: Vec::new(), out: BufWriter::new(stdout), error: None };
    super::traffic::folders_hold_recordings(&args.inputs)?;
    let (pipeline, error) = ingest_until(&args.inputs, config, args.until.until, &mut writer)?;
    if let Some(e) = writer.error {
        return Err(super::stdout_error(e));
    }
    writer.out.flush().map_err(super::stdout_error)?;
    match error {
        Some(e) => Err(e),
        // Cut at a time, the stream may hold nothing yet: that is an answer, not bad input.
        None if args.until.until.is_some() => Ok(ExitCode::SUCCESS),
        None => super::traffic::required(&args.inputs, &pipeline).map(|()| ExitCode::SUCCESS),
    }
}

/// Writes each routed line as it leaves the router, replays in their replay position.
pub struct RouteWriter<W: Write> {
    pub all: bool,
    ids: Vec<Arc<str>>,
    pub out: W,
    error: Option<std::io::Error>,
}

impl<W: Write> RouteWriter<W> {
    pub fn new(out: W, all: bool) -> Self {
        Self { all, ids: Vec::new(), out, error: None }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RouteLine<'a> {
    line: u64,
    class: &'static str,
    session_thread_id: Option<&'a str>,
    owner_thread_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    msg: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    raw: Option<String>,
}

fn id_of(ids: &[Arc<str>], t: Option<ThreadIdx>) -> Option<&str> {
    t.and_then(|t| ids.get(t.index())).map(|s| &**s)
}

impl<W: Write> Sink for RouteWriter<W> {
    fn event(&mut self, event: &Event<'_, '_>) {
        if self.error.is_some() {
            return;
        }
        let line = match event {
            Event::Seen { id, .. } => {
                self.ids.push(Arc::clone(id));
                return;
            }
            Event::Line(r) => {
                // A record applied ahead of where it lies is printed there.
                if r.record.ahead || !self.all && !matches!(r.class, Class::Root | Class::Rehomed) {
                    return;
                }
                let msg: Option<&RawValue> = serde_json::from_str(r.record.raw).ok();
                RouteLine {
                    line: r.line_no,
                    class: r.class.as_str(),
                    session_thread_id: id_of(&self.ids, r.session),
                    owner_thread_id: id_of(&self.ids, r.owner),
                    msg,
                    raw: None,
                }
            }
            Event::Malformed { line_no, record, .. } if self.all => RouteLine {
                line: *line_no,
                class: Class::Malformed.as_str(),
                session_thread_id: None,
                owner_thread_id: None,
                msg: None,
                raw: Some(String::from_utf8_lossy(record).into_owned()),
            },
            _ => return,
        };
        let result = serde_json::to_writer(&mut self.out, &line)
            .map_err(std::io::Error::from)
            .and_then(|()| self.out.write_all(b"\n"));
        if let Err(e) = result {
            self.error = Some(e);
        }
    }
}
