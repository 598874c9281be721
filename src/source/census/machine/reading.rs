//! Reading what the followed files gained: whole lines of a session's files (only those older
//! than its tee, when a tee carries it), a sidecar whole whenever it is rewritten, a store
//! through its follower.

use super::followed::{READ_CHUNK, grow};
use super::{Gone, Machine};
use crate::source::files;
use crate::wire::Origin;

impl Machine {
    /// Sends what a followed file gained since the last read (whole lines only).
    pub(super) async fn read_file(&mut self, i: usize) -> Result<(), Gone> {
        if let Some(follower) = &mut self.files[i].store {
            // A store that cannot be read now is counted (each failed look) and looked at again.
            let records = follower.poll().unwrap_or_else(|e| {
                self.read_trouble.unreadable(&e.to_string());
                Vec::new()
            });
            if !records.is_empty() {
                self.forward(Origin::NONE, records).await?;
            }
            return Ok(());
        }
        if files::is_sidecar(&self.files[i].path) {
            return self.read_sidecar(i).await;
        }
        loop {
            let f = &mut self.files[i];
            if f.before.is_some_and(|b| b.done()) {
                return Ok(());
            }
            let Some(mut chunk) = grow(&f.path, &mut f.read) else { return Ok(()) };
            if let Some(before) = &mut f.before {
                chunk = before.keep(&chunk);
            }
            let more = chunk.len() as u64 >= READ_CHUNK;
            let origin = f.origin.clone();
            self.learn_project(i, &chunk);
            if !chunk.is_empty() {
                self.forward(origin, chunk).await?;
            }
            if !more {
                return Ok(());
            }
        }
    }

    /// A sidecar (Claude Code's `agent-<id>.meta.json`, wire.md §6) is one JSON object with no
    /// line break at its end, rewritten whole (`finished: true` once its agent ends): read as
    /// lines it never gave one, so a child at depth 2 (linked by its sidecar alone) stayed
    /// pending for good and every child was pending until its parent's tool result. It is sent
    /// whole whenever it changed, once it parses: a rewrite caught half-way is read again on the
    /// change that completes it.
    async fn read_sidecar(&mut self, i: usize) -> Result<(), Gone> {
        let f = &mut self.files[i];
        let Ok(meta) = std::fs::metadata(&f.path) else { return Ok(()) };
        let modified = meta.modified().ok();
        if (meta.len(), modified) == (f.read, f.modified) || !meta.is_file() {
            return Ok(());
        }
        let Ok(text) = files::read_sidecar(&f.path) else { return Ok(()) };
        if serde_json::from_slice::<serde::de::IgnoredAny>(&text).is_err() {
            return Ok(());
        }
        (f.read, f.modified) = (meta.len(), modified);
        let origin = f.origin.clone();
        self.forward(origin, text).await
    }

    /// A session named by a guess takes the cwd the first of its lines that carries one says (the
    /// next snapshot regroups it): the lines are read here anyway, the file is not read again.
    fn learn_project(&mut self, file: usize, chunk: &[u8]) {
        let Some(s) = self.sessions.iter_mut().find(|s| s.project_guessed && s.files.contains(&file)) else { return };
        let Some(cwd_in) = s.agent.place.as_ref().and_then(|p| p.cwd_in) else { return };
        if let Some(cwd) = cwd_in(chunk) {
            s.project = Some(cwd);
            s.project_guessed = false;
        }
    }
}
