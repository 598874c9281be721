//! Reading what the followed files gained: whole lines of a session's files (only those older
//! than its tee, when a tee carries it), a sidecar whole whenever it is rewritten, a store
//! through its follower.

use std::collections::HashMap;

use super::followed::{Cursor, grow};
use super::{Gone, Machine};
use crate::source::{files, merge};
use crate::wire::Origin;

/// Chunks of each file a session read from history takes at once at most: a file written faster
/// than it is read would hold the rest of the history up for good; past this, it takes its turn
/// with the others.
const HISTORY_ROUNDS: usize = 1_024;

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
                self.stores_changed = true;
                self.forward(Origin::NONE, records).await?;
            }
            return Ok(());
        }
        if files::is_sidecar(&self.files[i].path) {
            return self.read_sidecar(i).await;
        }
        // One chunk a turn: the rest is read on the next (one big file does not hold up the
        // others, the ticks, or the screen).
        let Some((chunk, more)) = self.next_chunk(i) else { return Ok(()) };
        if more {
            self.pending.insert(i);
        }
        if chunk.is_empty() {
            return Ok(());
        }
        let origin = self.files[i].origin.clone();
        self.forward(origin, chunk).await
    }

    /// A session's files: while the history on disk at start is read, to their end (up to
    /// [`HISTORY_ROUNDS`] chunks of each), else a chunk of each, the rest on later turns. A
    /// chunk of every session at a time left tens of thousands of sessions read half-way for
    /// most of a minute, their agents shown running on a machine where none ran (18,902 at
    /// once on the 50k HOME, with 0 live); history holds up nothing live (the screen has a
    /// thread of its own, and the first snapshot waits for the whole of it anyway).
    pub(super) async fn read_session(&mut self, files: &[usize]) -> Result<(), Gone> {
        self.read_files(files).await?;
        let mut rounds = 1;
        while self.history && rounds < HISTORY_ROUNDS {
            let more: Vec<usize> = files.iter().copied().filter(|i| self.pending.remove(i)).collect();
            if more.is_empty() {
                break;
            }
            self.read_files(&more).await?;
            rounds += 1;
        }
        match files.first() {
            Some(&first) if self.history => self.stopped_once_read(self.files[first].session).await,
            _ => Ok(()),
        }
    }

    /// One more chunk of each file that held more than its last one.
    pub(super) async fn read_pending(&mut self) -> Result<(), Gone> {
        let files: Vec<usize> = std::mem::take(&mut self.pending).into_iter().collect();
        self.read_files(&files).await
    }

    /// Reads what several followed files gained. The plain files of one session are read
    /// together, their lines in stream time ([`merge::runs`]): a parent's lines no longer all go
    /// before those its children wrote meanwhile (a backlog read at start showed each child only
    /// after its parent's whole file). Stores are read as they are; sidecars after the lines (a
    /// sub-agent's `finished` after its last line).
    pub(super) async fn read_files(&mut self, files: &[usize]) -> Result<(), Gone> {
        // Each session's files, sessions in the order first met (where each session's group is).
        let mut groups: Vec<Vec<usize>> = Vec::new();
        let mut at: HashMap<usize, usize> = HashMap::new();
        let mut sidecars = Vec::new();
        for &i in files {
            if self.files[i].is_store() {
                self.read_file(i).await?;
            } else if files::is_sidecar(&self.files[i].path) {
                sidecars.push(i);
            } else {
                let session = self.files[i].session;
                if let Some(&g) = at.get(&session) {
                    groups[g].push(i);
                } else {
                    at.insert(session, groups.len());
                    groups.push(vec![i]);
                }
            }
        }
        for group in groups {
            match group[..] {
                [one] => self.read_file(one).await?,
                _ => self.read_together(&group).await?,
            }
        }
        for i in sidecars {
            self.read_file(i).await?;
        }
        Ok(())
    }

    /// One session's files read together: up to a chunk of each at a time, their lines merged
    /// by stream time across reads ([`merge::runs_upto`]): once a file's piece is taken
    /// and it holds more, its next piece is read before any later line of the others goes (a
    /// backlog over the chunk was in order only within each round). What the others have left
    /// waits here, at most a chunk of each. One chunk of each a turn: when one needs a second,
    /// what is held is given back to its file (read again next turn, nothing kept meanwhile);
    /// only lines a tee's start cuts cannot be given back, and are read to their end.
    async fn read_together(&mut self, group: &[usize]) -> Result<(), Gone> {
        let mut held: Vec<Vec<u8>> = vec![Vec::new(); group.len()];
        // Whether a file may hold more than what it holds here (each is read once at least).
        let mut more = vec![true; group.len()];
        let mut taken = vec![false; group.len()];
        let bounded = group.iter().all(|&i| self.files[i].before.is_none());
        loop {
            for (k, &i) in group.iter().enumerate() {
                if held[k].is_empty() && more[k] {
                    if taken[k] && bounded {
                        self.give_back(group, &held, &more);
                        return Ok(());
                    }
                    (held[k], more[k]) = self.next_chunk(i).unwrap_or_default();
                    taken[k] = true;
                }
            }
            let slices: Vec<&[u8]> = held.iter().map(Vec::as_slice).collect();
            let (runs, used) = merge::runs_upto(&slices, &more);
            for (n, range) in runs {
                let origin = self.files[group[n]].origin.clone();
                self.forward(origin, held[n][range].to_vec()).await?;
            }
            for (h, used) in held.iter_mut().zip(used) {
                h.drain(..used);
            }
            if !more.contains(&true) && held.iter().all(Vec::is_empty) {
                return Ok(());
            }
        }
    }

    /// The bytes of a session's files read and not sent yet, given back: each file is read again
    /// from its first one on the next turn, with those that held more.
    fn give_back(&mut self, group: &[usize], held: &[Vec<u8>], more: &[bool]) {
        for ((&i, h), &more) in group.iter().zip(held).zip(more) {
            self.files[i].read -= h.len() as u64;
            if more || !h.is_empty() {
                self.pending.insert(i);
            }
        }
    }

    /// What file `i` gained since it was last read, whole lines (only those older than its tee),
    /// and whether the file held more than that chunk (read on a later turn); `None` when it
    /// gained nothing. A chunk cut at its last whole line is short of a full one either way:
    /// taken as the end, a file over it was read no further until it changed again (a 10 MB
    /// transcript stayed at 6,707 of its 16,001 records).
    fn next_chunk(&mut self, i: usize) -> Option<(Vec<u8>, bool)> {
        let f = &mut self.files[i];
        if f.before.is_some_and(|b| b.done()) {
            return None;
        }
        let at = Cursor { read: &mut f.read, scanned: &mut f.scanned };
        let (mut chunk, mut more) = grow(&f.path, at, &mut f.written)?;
        if let Some(before) = &mut f.before {
            chunk = before.keep(&chunk);
            // The rest is the tee's.
            more &= !before.done();
        }
        self.learn_project(i, &chunk);
        Some((chunk, more))
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
        f.written = modified.unwrap_or(f.written);
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
        let s = &mut self.sessions[self.files[file].session];
        if !s.project_guessed {
            return;
        }
        let Some(cwd_in) = s.agent.place.as_ref().and_then(|p| p.cwd_in) else { return };
        if let Some(cwd) = cwd_in(chunk) {
            s.project = Some(cwd);
            s.project_guessed = false;
        }
    }
}
