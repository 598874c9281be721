//! Where bytes come from: files, directories, `.gz`, stdin (and, for live sessions, sockets and
//! the tee proxy). Sources split bytes into records and know nothing of what the records mean.

pub mod files;
pub mod replay;
