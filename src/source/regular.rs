//! Opening what discovery expects to be a regular file (a transcript, a rollout, a store, a
//! sidecar, an agent's per-process file) without ever blocking on it. A FIFO opened for reading
//! waits for a writer, and a device may never answer: with one where a rollout or a store was
//! expected, `ps` printed nothing for ever and the machine view froze, deaf to `q` and SIGTERM
//! (issue 22 item 9). The type is checked before the open, and again on the descriptor (the name
//! may have been replaced in between), which is opened non-blocking so that even then the open
//! returns at once.
//!
//! Inputs named on the command line are not read through here: `stats <(cmd)` reads a pipe on
//! purpose.

use std::fs::{self, File, Metadata, OpenOptions};
use std::io;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// Opens `path` for reading if it is a regular file (or a link to one).
pub fn open(path: &Path) -> io::Result<File> {
    check(path, &fs::metadata(path)?)?;
    let file = OpenOptions::new().read(true).custom_flags(nix::libc::O_NONBLOCK | nix::libc::O_NOCTTY).open(path)?;
    check(path, &file.metadata()?)?;
    Ok(file)
}

/// [`open`] of a file a stat of this look just found regular: only the descriptor is checked.
/// The open is non-blocking, so a FIFO put there since cannot hold it up; the look before the
/// open was a second stat of every session file on the machine view's first screen.
pub fn open_listed(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new().read(true).custom_flags(nix::libc::O_NONBLOCK | nix::libc::O_NOCTTY).open(path)?;
    check(path, &file.metadata()?)?;
    Ok(file)
}

/// Whether `path` is a regular file (or a link to one).
pub fn is_regular(path: &Path) -> bool {
    fs::metadata(path).is_ok_and(|m| m.is_file())
}

/// Why `path` will not be opened: `None` for a regular file or a name that is not there.
pub fn refusal(path: &Path) -> Option<io::Error> {
    stat(path).err()
}

/// A regular file's metadata (one look serves both questions); `Ok(None)` when nothing can be
/// seen there, an error saying why when it is there and no regular file.
pub fn stat(path: &Path) -> io::Result<Option<Metadata>> {
    let Ok(meta) = fs::metadata(path) else { return Ok(None) };
    check(path, &meta)?;
    Ok(Some(meta))
}

fn check(path: &Path, meta: &Metadata) -> io::Result<()> {
    if meta.is_file() {
        return Ok(());
    }
    let t = meta.file_type();
    let kind = if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_dir() {
        "a directory"
    } else {
        "not a file"
    };
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{}: not a regular file ({kind}), not opened", path.display()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_is_refused_without_waiting_for_a_writer() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("rollout.jsonl");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRUSR | nix::sys::stat::Mode::S_IWUSR).unwrap();
        let e = open(&fifo).expect_err("a FIFO is no regular file");
        assert!(e.to_string().contains("not a regular file (a FIFO)"), "{e}");
        assert!(!is_regular(&fifo) && refusal(&fifo).is_some());
        assert!(open_listed(&fifo).unwrap_err().to_string().contains("a FIFO"), "checked on the descriptor");
        let file = dir.path().join("real.jsonl");
        fs::write(&file, b"{}\n").unwrap();
        assert!(open_listed(&file).is_ok());
        assert!(open(&file).is_ok() && is_regular(&file) && refusal(&file).is_none());
        assert!(refusal(&dir.path().join("missing")).is_none(), "what is not there is no refusal");
        let dev = Path::new("/dev/null");
        assert!(open(dev).unwrap_err().to_string().contains("character device"));
    }
}
