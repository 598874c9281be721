//! Finding the sessions to follow: every place looked at again when a folder changed, each new
//! session admitted once (with the tee that carries it, if one does), and its files followed.

use std::collections::HashMap;
use std::path::PathBuf;

use super::followed::Followed;
use super::{Gone, Machine, RunState, Session};
use crate::source::agents::Candidate;
use crate::source::census::{Before, Census, scan};
use crate::source::proc;
use crate::wire::Origin;

/// What is to be read of a candidate admitted.
enum Work {
    /// Its files followed from now, to be read from their start.
    Files(Vec<usize>),
    /// A new session within a store.
    Within(usize, Candidate),
}

impl Machine {
    /// Looks at every place again (and the socket folder): new sessions, new files of known ones.
    /// Its census (the walk of `/proc` it took) is the one the tick's snapshot judges by.
    pub(super) async fn rescan(&mut self) -> Result<(), Gone> {
        self.find_tees();
        let mut found = scan(&self.opts.env, &self.opts.window);
        // One walk for the whole tick: the files known and found, and the folders whose held files
        // say a session runs.
        let mut wants = self.wanted.clone();
        // Only what is not followed yet is made canonical again (a look at the disk a file).
        for c in found.candidates.iter().filter(|c| c.files.iter().any(|f| !self.by_path.contains_key(f))) {
            wants.candidate_in(c, &mut self.canonical);
        }
        let census = Census::take(&self.opts, &wants);
        census.add_running(&self.opts, &mut found);
        self.looked_in.clone_from(&found.looked_in);
        self.trouble = found.trouble;
        self.watch_roots();
        let sessions_before = self.sessions.len();
        let tee_pids: HashMap<u32, usize> =
            self.tees.iter().enumerate().filter_map(|(i, t)| Some((t.pid?, i))).collect();
        // Newest first: the first screen lists the newest sessions first, and they are read first
        // (read oldest first, 50,000 sessions of history came before the ones on screen).
        let work: Vec<Work> = found.candidates.into_iter().map(|c| self.admit(c, &census, &tee_pids)).collect();
        self.census = Some(census);
        if self.sessions.len() > sessions_before {
            // The screen learns whose a new session's threads are before they arrive, so they
            // land in their agent's group at once, not two seconds later; and it counts every
            // session found before the first is read.
            self.announce().await?;
        }
        for w in work {
            match w {
                Work::Files(files) => self.read_session(&files).await?,
                Work::Within(session, c) => {
                    let cursor = self.read_within(&c).await?;
                    self.follow_files(session, c, cursor);
                }
            }
        }
        // Folders resolved are good for this look only.
        self.canonical = proc::Canonical::keeping();
        Ok(())
    }

    /// A candidate found: a new session, or more of a known one. Returns what is to be read of it
    /// once every new session is announced: its files from their start, or a new session within
    /// a store (read from the store, then its log followed).
    fn admit(&mut self, c: Candidate, census: &Census, tee_pids: &HashMap<u32, usize>) -> Work {
        let key = (c.agent.name, c.id.clone());
        let session = if let Some(&s) = self.by_key.get(&key) {
            let known = &mut self.sessions[s];
            known.modified = known.modified.max(c.modified);
            if known.project_guessed && !c.project_guessed && c.project.is_some() {
                known.project.clone_from(&c.project);
                known.project_guessed = false;
            }
            s
        } else {
            let s = self.sessions.len();
            let tee = self.tee_of(&c, census, tee_pids);
            self.sessions.push(Session {
                agent: c.agent,
                id: c.id.clone(),
                project: c.project.clone(),
                project_guessed: c.project_guessed,
                source: c.location.clone(),
                files: Vec::new(),
                canonical: Vec::new(),
                tee,
                within: c.within.clone(),
                modified: c.modified,
                run: RunState::default(),
            });
            if let Some(ts) = tee.and_then(|t| self.tees[t].session) {
                // The tee's row takes the project its rollouts name.
                if self.sessions[ts].project.is_none() {
                    self.sessions[ts].project.clone_from(&c.project);
                }
            }
            self.by_key.insert(key, s);
            if c.within.is_some() && c.agent.store.is_some() {
                return Work::Within(s, c);
            }
            s
        };
        Work::Files(self.follow_files(session, c, None))
    }

    /// A session within a store: its subtree as the store holds it now, sent; what follows comes
    /// from the store's log (one follower per store, from the returned position on).
    async fn read_within(&mut self, c: &Candidate) -> Result<Option<i64>, Gone> {
        let (Some(store), Some(root)) = (&c.agent.store, &c.within) else { return Ok(None) };
        match (store.read)(&c.location, root) {
            Ok((records, cursor)) => {
                self.forward(Origin::NONE, records).await?;
                Ok(Some(cursor))
            }
            Err(e) => {
                self.read_trouble.unreadable(&e.to_string());
                Ok(None)
            }
        }
    }

    /// Follows the files of a candidate not followed yet; the plain files among them are to be
    /// read from their start.
    fn follow_files(&mut self, session: usize, c: Candidate, cursor: Option<i64>) -> Vec<usize> {
        let before = self.sessions[session].tee.map(|t| Before::new(self.tees[t].started_ms.unwrap_or(i64::MIN)));
        let mut fresh = Vec::new();
        for path in c.files {
            if let Some(&i) = self.by_path.get(&path) {
                // One store, many sessions: each lists the store's follower as its file.
                if c.within.is_some() && !self.sessions[session].files.contains(&i) {
                    self.sessions[session].files.push(i);
                }
                continue;
            }
            let store = match (&c.agent.store, &c.within, cursor) {
                (Some(store), Some(_), Some(cursor)) => match (store.follow)(&path, cursor) {
                    Ok(f) => Some((store, f)),
                    Err(e) => {
                        self.read_trouble.unreadable(&e.to_string());
                        continue;
                    }
                },
                (_, Some(_), _) => continue,
                _ => None,
            };
            let i = self.files.len();
            if let Some((store, _)) = &store {
                // A store's writer commits into files beside it (SQLite's `-wal`), not the store.
                for suffix in store.companions {
                    let mut companion = path.clone().into_os_string();
                    companion.push(suffix);
                    let companion = PathBuf::from(companion);
                    self.by_path.insert(companion.clone(), i);
                    self.watcher.watch(&companion);
                }
            }
            let is_store = store.is_some();
            let canonical = self.canonical.take(&path);
            // Discovery's time for the session (its newest file's) stands for each file's until
            // the file is first read: a stat of every file of 50,000 sessions held up the first
            // screen, and the row shows the newest anyway.
            let followed = Followed::new(path.clone(), canonical, session, c.modified, before, store.map(|(_, f)| f));
            if is_store {
                self.wanted.store(followed.canonical.clone(), c.agent);
            } else {
                self.wanted.file(followed.canonical.clone());
                self.sessions[session].canonical.push(followed.canonical.clone());
            }
            self.files.push(followed);
            self.by_path.insert(path.clone(), i);
            self.sessions[session].files.push(i);
            // Found by this scan below an agent's folder, watched already: nothing to add.
            if !self.watcher.covers(&path) {
                self.watcher.watch(&path);
            }
            if !is_store {
                fresh.push(i);
            }
        }
        fresh
    }

    /// The tee carrying a candidate: by the threads its stream named, or by the process under it
    /// that holds the candidate's file.
    fn tee_of(&self, c: &Candidate, census: &Census, tee_pids: &HashMap<u32, usize>) -> Option<usize> {
        if let Some(i) = self.tees.iter().position(|t| t.threads.contains(&c.id)) {
            return Some(i);
        }
        // No tee runs: no file is under one (and no look at the disk or `/proc` for each).
        if tee_pids.is_empty() {
            return None;
        }
        let files: Vec<PathBuf> = c.files.iter().map(|f| proc::canonical(f)).collect();
        census.under_tee(&self.opts.proc, &files, tee_pids)
    }
}
