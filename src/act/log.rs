//! The acts done outside a tee (an OpenCode server's abort, a signal to a session's process), one
//! JSON line each, appended to `$XDG_STATE_HOME/swarmtop/acts.ndjson` (mode 0600): what was
//! stopped, how, by whom, and how it ended. A tee records its acts in its own recording.

use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt;

use serde_json::Value;

use crate::source::recording;

/// Where the log is: beside the recordings (the sources read it back: `source::acts`).
pub use crate::source::acts::path;

/// Appends one act (`ts` is added). A log that cannot be written is said on stderr, and the act
/// stands: it happened. A stop that took reads `outcome` `aborted` (`source::acts` hands those on).
pub fn append(mut act: serde_json::Map<String, Value>) {
    act.insert("ts".into(), Value::from(recording::unix_ms()));
    let mut line = Value::Object(act).to_string();
    line.push('\n');
    let written = path().and_then(|p| {
        if let Some(dir) = p.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::OpenOptions::new().create(true).append(true).mode(0o600).open(&p)?.write_all(line.as_bytes())
    });
    if let Err(e) = written {
        eprintln!("swarmtop: cannot log the act: {e}");
    }
}
