//! Who a file is, cheaply: device, inode, size, modification time and a digest of its first
//! bytes. A sync compares these with what it stored to decide, without reading a file, whether
//! it grew (same file, larger), was truncated (smaller), rotated or replaced (another inode), or
//! rewritten in place (same size, another time or another start).

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use sha2::{Digest, Sha256};

use super::rows::FileState;

/// Bytes of a file's start digested: enough to tell two files apart that share size and time.
pub const HEAD_BYTES: u64 = 4096;

/// The file's state now; `None` when it cannot be read (gone, or not ours to read).
pub fn of(path: &Path) -> Option<FileState> {
    let mut file = File::open(path).ok()?;
    let meta = file.metadata().ok()?;
    let mut head = Vec::with_capacity(HEAD_BYTES as usize);
    (&mut file).take(HEAD_BYTES).read_to_end(&mut head).ok()?;
    Some(FileState {
        path: path.to_owned(),
        dev: meta.dev(),
        ino: meta.ino(),
        size: meta.size(),
        mtime_ns: meta.mtime().saturating_mul(1_000_000_000).saturating_add(meta.mtime_nsec()),
        head: Sha256::digest(&head).into(),
    })
}

/// Whether `file` still starts with the `len` bytes whose digest a state of it holds (`head`):
/// the bytes a reader read from it are still there (it grew, nothing before `len` was rewritten).
pub fn starts_as(file: &File, len: u64, head: &[u8; 32]) -> std::io::Result<bool> {
    let mut start = Vec::with_capacity(usize::try_from(len.min(HEAD_BYTES)).unwrap_or(0));
    let mut reader = file;
    std::io::Seek::seek(&mut reader, std::io::SeekFrom::Start(0))?;
    reader.take(len.min(HEAD_BYTES)).read_to_end(&mut start)?;
    let digest: [u8; 32] = Sha256::digest(&start).into();
    Ok(&digest == head)
}

/// A row of a store holding many sessions (OpenCode's database), known by its time, not its
/// bytes: the store file's device and inode, the session's last change, and its root's id.
pub fn of_rows(db: &Path, root: &str, updated_ms: i64) -> Option<FileState> {
    let meta = std::fs::metadata(db).ok()?;
    Some(FileState {
        path: db.join(root),
        dev: meta.dev(),
        ino: meta.ino(),
        size: 0,
        mtime_ns: updated_ms.saturating_mul(1_000_000),
        head: Sha256::digest(root.as_bytes()).into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growth_truncation_and_replacement_change_the_state() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.jsonl");
        std::fs::write(&path, b"{\"a\":1}\n").unwrap();
        let first = of(&path).unwrap();
        assert_eq!(of(&path).unwrap(), first, "nothing changed, nothing differs");
        std::fs::write(&path, b"{\"a\":1}\n{\"b\":2}\n").unwrap();
        let grown = of(&path).unwrap();
        assert_eq!((grown.ino, grown.size), (first.ino, 16));
        let other = dir.path().join("b.jsonl");
        std::fs::write(&other, b"{\"c\":1}\n").unwrap();
        std::fs::rename(&other, &path).unwrap();
        let replaced = of(&path).unwrap();
        assert_ne!(replaced.ino, first.ino, "a file renamed over it is another file");
        assert_ne!(replaced.head, first.head);
        assert!(of(&dir.path().join("gone")).is_none());
    }
}
