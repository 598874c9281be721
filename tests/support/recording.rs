//! Recording bundles (recording.md): writing one from what the client saw, and reading one back.
//!
//! The writer exists so the demo can be recorded before `swarmtop tee --record` lands; the reader is what
//! the end-to-end test uses to compare a recording (the client's own now, the tee's later) with the bytes
//! that really went over the pipe.

use std::io::Write;
use std::path::Path;

use base64::Engine as _;
use serde::Deserialize;
use serde_json::value::RawValue;

use super::codex_driver::Captured;

/// The header line of a bundle recorded at the client side of a `codex app-server` pipe. It carries the
/// same fields a `swarmtop tee` recording has (`source: tee`, with `dir` c2s/s2c lines), because it holds
/// exactly what a tee between this client and the server would have recorded.
pub fn header(started_ms: u64, command: &[&str], host: &str) -> Vec<u8> {
    // Written by hand rather than through serde_json, which would sort the keys: recording.md lists
    // `swarmtop` first so that a reader can tell a bundle from its first bytes.
    let command = serde_json::to_string(command).expect("strings serialise");
    let host = serde_json::to_string(host).expect("strings serialise");
    format!(
        "{{\"swarmtop\":\"recording\",\"version\":1,\"startedMs\":{started_ms},\"source\":\"tee\",\"command\":{command},\"host\":{host}}}\n"
    )
    .into_bytes()
}

/// One envelope line, built as bytes around the verbatim message (recording.md: never re-serialised).
pub fn envelope(c: &Captured) -> Vec<u8> {
    let mut out = format!("{{\"ts\":{},\"dir\":\"{}\",", c.ts_ms, c.dir.as_str()).into_bytes();
    let is_json = std::str::from_utf8(&c.line).is_ok_and(|s| serde_json::from_str::<&RawValue>(s).is_ok());
    if is_json && !c.partial {
        out.extend_from_slice(b"\"msg\":");
        out.extend_from_slice(&c.line);
    } else {
        let b64 = base64::engine::general_purpose::STANDARD.encode(&c.line);
        out.extend_from_slice(format!("\"rawB64\":\"{b64}\"").as_bytes());
        if c.partial {
            out.extend_from_slice(b",\"partial\":true");
        }
    }
    out.extend_from_slice(b"}\n");
    out
}

pub fn write_bundle(path: &Path, header_line: &[u8], transcript: &[Captured]) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    out.write_all(header_line)?;
    for c in transcript {
        out.write_all(&envelope(c))?;
    }
    out.flush()
}

#[derive(Deserialize)]
struct Envelope<'a> {
    ts: u64,
    dir: &'a str,
    #[serde(borrow)]
    msg: Option<&'a RawValue>,
    #[serde(rename = "rawB64")]
    raw_b64: Option<String>,
    #[serde(default)]
    partial: bool,
}

/// A bundle read back: its header and, per direction, the byte stream the lines add up to.
pub struct Bundle {
    pub header: serde_json::Value,
    pub records: usize,
    /// Lines that are not a valid envelope, or carry `rawB64` (the input line was not JSON).
    pub malformed: Vec<String>,
    pub s2c: Vec<u8>,
    pub c2s: Vec<u8>,
    pub first_ts: Option<u64>,
    pub last_ts: Option<u64>,
    /// Envelopes whose `ts` is earlier than the one before (a tee appends in arrival order).
    pub ts_regressions: usize,
}

pub fn read_bundle(path: &Path) -> Result<Bundle, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    let mut lines = text.split('\n').filter(|l| !l.trim().is_empty());
    let header_line = lines.next().ok_or("empty recording")?;
    let header: serde_json::Value =
        serde_json::from_str(header_line).map_err(|e| format!("header is not JSON: {e}"))?;
    let mut b = Bundle {
        header,
        records: 0,
        malformed: Vec::new(),
        s2c: Vec::new(),
        c2s: Vec::new(),
        first_ts: None,
        last_ts: None,
        ts_regressions: 0,
    };
    for line in lines {
        b.records += 1;
        let Ok(env) = serde_json::from_str::<Envelope<'_>>(line) else {
            b.malformed.push(line.chars().take(200).collect());
            continue;
        };
        if b.last_ts.is_some_and(|last| env.ts < last) {
            b.ts_regressions += 1;
        }
        b.first_ts.get_or_insert(env.ts);
        b.last_ts = Some(env.ts);
        let stream = match env.dir {
            "s2c" => &mut b.s2c,
            "c2s" => &mut b.c2s,
            _ => {
                b.malformed.push(line.chars().take(200).collect());
                continue;
            }
        };
        match (env.msg, env.raw_b64) {
            (Some(msg), None) => {
                stream.extend_from_slice(msg.get().as_bytes());
                stream.push(b'\n');
            }
            (None, Some(raw)) => {
                // Kept losslessly, but a line that was not JSON is malformed input all the same.
                b.malformed.push(line.chars().take(200).collect());
                let bytes = base64::engine::general_purpose::STANDARD.decode(raw).map_err(|e| e.to_string())?;
                stream.extend_from_slice(&bytes);
                if !env.partial {
                    stream.push(b'\n');
                }
            }
            _ => b.malformed.push(line.chars().take(200).collect()),
        }
    }
    Ok(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::support::codex_driver::Dir;

    fn captured(dir: Dir, line: &[u8], partial: bool) -> Captured {
        Captured { ts_ms: 1_796_000_000_000, dir, line: line.to_vec(), partial }
    }

    #[test]
    fn envelopes_keep_the_line_verbatim_and_read_back_to_the_same_bytes() {
        let lines = [
            captured(Dir::C2s, br#"{"method":"initialize","id":1}"#, false),
            // Spacing and number spelling survive (recording.md: never re-serialised).
            captured(Dir::S2c, br#"{ "id":1, "result":{"x":1.0e3} }"#, false),
            captured(Dir::S2c, b"not json \xff", false),
            captured(Dir::S2c, br#"{"method":"cut"#, true),
        ];
        assert_eq!(
            envelope(&lines[1]),
            br#"{"ts":1796000000000,"dir":"s2c","msg":{ "id":1, "result":{"x":1.0e3} }}"#
                .iter()
                .chain(b"\n")
                .copied()
                .collect::<Vec<u8>>()
        );
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("r.ndjson");
        write_bundle(&path, &header(1, &["codex", "app-server"], "h"), &lines).expect("write");
        let b = read_bundle(&path).expect("read");
        assert_eq!(b.header["command"][1], "app-server");
        assert_eq!(b.records, 4);
        assert_eq!(b.c2s, b"{\"method\":\"initialize\",\"id\":1}\n");
        assert_eq!(b.s2c, b"{ \"id\":1, \"result\":{\"x\":1.0e3} }\nnot json \xff\n{\"method\":\"cut");
        assert_eq!(b.malformed.len(), 2, "the raw line and the partial one are malformed input");
    }
}
