//! An agent's session server, stopped through its own API: OpenCode under `opencode serve` (1.18.33),
//! the one agent that serves its sessions. Its sessions through its HTTP API, stopped with its own
//! abort (`POST /session/{id}/abort`, what its TUI's Esc does; `docs/acting.md` §5). A session is
//! busy while `GET /session/status` lists it; its abort ends it with `MessageAbortedError` on the
//! running message, and a running `task` child of it is cancelled with it.

use std::collections::HashSet;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use super::target::Tree;
use crate::source::agents::{AGENTS, Window};
use crate::source::census::{Census, Options, Wants};
use crate::source::seen::Trouble;

/// How an act through a server is named in the acts log.
pub const VIA: &str = "opencode serve";

/// The servers running as us, as the machine view finds them (`HOST:PORT`): beside the stores
/// of the agents that keep their sessions in one (the registry's), whatever their age.
pub fn running() -> Vec<String> {
    let opts = Options::machine(Window::all());
    let mut wants = Wants::default();
    for agent in AGENTS.iter().filter(|a| a.store.is_some()) {
        let Some(place) = &agent.place else { continue };
        let Some(root) = (place.root)(&opts.env) else { continue };
        for c in (place.scan)(&root, &opts.window, &mut Trouble::default()) {
            wants.candidate(&c);
        }
    }
    Census::take(&opts, &wants).servers().into_iter().map(|(_, s)| s.authority).collect()
}

/// How long one request to the server may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Most bytes read of one answer (a session's messages can be long).
const ANSWER_BYTES: u64 = 64 << 20;

#[derive(Debug, Clone, Deserialize)]
pub struct Session {
    pub id: String,
    #[serde(rename = "parentID", default)]
    pub parent: Option<String>,
    #[serde(default)]
    pub title: Option<String>,
}

/// A server's sessions and which of them are busy.
#[derive(Debug, Default)]
pub struct Sessions {
    pub list: Vec<Session>,
    pub busy: HashSet<String>,
}

impl Tree for Sessions {
    fn len(&self) -> usize {
        self.list.len()
    }

    fn id(&self, i: usize) -> &str {
        &self.list[i].id
    }

    fn names(&self, i: usize) -> Vec<String> {
        let title = self.list[i].title.clone().unwrap_or_default();
        // A child's title is "<description> (@<agent> subagent)": its description names it too.
        let short = title.split(" (@").next().unwrap_or_default().to_owned();
        vec![title, short]
    }

    fn children(&self, i: usize) -> Vec<usize> {
        let id = &self.list[i].id;
        (0..self.list.len()).filter(|&c| self.list[c].parent.as_ref() == Some(id)).collect()
    }

    fn running(&self, i: usize) -> Option<String> {
        self.busy.contains(&self.list[i].id).then(String::new)
    }
}

/// How a session's last step ended, as the server tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Running,
    /// Its running message ended with `MessageAbortedError`: the abort took.
    Aborted,
    /// It finished by itself (with this error's name, if it failed).
    Finished(Option<String>),
}

pub struct Server {
    /// `HOST:PORT`.
    pub authority: String,
    agent: ureq::Agent,
}

impl Server {
    /// `http://HOST:PORT` (a trailing `/` allowed) or `HOST:PORT`.
    pub fn new(url: &str) -> Result<Self, String> {
        let authority = url.strip_prefix("http://").unwrap_or(url).trim_end_matches('/');
        if authority.is_empty() || authority.contains(['/', '?', '#', '@']) || url.starts_with("https://") {
            return Err(format!("not an OpenCode server's address (http://HOST:PORT): {url}"));
        }
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(REQUEST_TIMEOUT))
            .user_agent(concat!("swarmtop/", env!("CARGO_PKG_VERSION")))
            .build();
        Ok(Self { authority: authority.to_owned(), agent: config.into() })
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.authority)
    }

    fn json(&self, method: &str, path: &str) -> Result<Value, String> {
        let what = format!("{method} {}", self.url(path));
        let answer = if method == "POST" {
            self.agent.post(self.url(path)).header("Content-Type", "application/json").send("{}")
        } else {
            self.agent.get(self.url(path)).call()
        };
        let mut answer = answer.map_err(|e| format!("{what}: {e}"))?;
        let status = answer.status().as_u16();
        let body =
            answer.body_mut().with_config().limit(ANSWER_BYTES).read_to_vec().map_err(|e| format!("{what}: {e}"))?;
        if !(200..300).contains(&status) {
            return Err(format!("{what}: HTTP {status}"));
        }
        serde_json::from_slice(&body).map_err(|e| format!("{what}: not JSON: {e}"))
    }

    /// Every session the server lists, and the busy ones.
    pub fn sessions(&self) -> Result<Sessions, String> {
        let list = serde_json::from_value(self.json("GET", "/session")?).map_err(|e| format!("GET /session: {e}"))?;
        Ok(Sessions { list, busy: self.busy()? })
    }

    fn busy(&self) -> Result<HashSet<String>, String> {
        let Value::Object(statuses) = self.json("GET", "/session/status")? else {
            return Err(format!("{}: /session/status is not an object", self.authority));
        };
        Ok(statuses
            .into_iter()
            .filter(|(_, s)| s.get("type").and_then(Value::as_str).is_some_and(|t| t != "idle"))
            .map(|(id, _)| id)
            .collect())
    }

    /// OpenCode's own abort of a session.
    pub fn abort(&self, id: &str) -> Result<(), String> {
        match self.json("POST", &format!("/session/{}/abort", segment(id)))? {
            Value::Bool(true) => Ok(()),
            other => Err(format!("the server did not abort {id}: {other}")),
        }
    }

    /// How the session's newest assistant message stands.
    pub fn outcome(&self, id: &str) -> Result<Outcome, String> {
        if self.busy()?.contains(id) {
            return Ok(Outcome::Running);
        }
        let messages = self.json("GET", &format!("/session/{}/message", segment(id)))?;
        let last = messages
            .as_array()
            .into_iter()
            .flatten()
            .rev()
            .find(|m| m.pointer("/info/role").and_then(Value::as_str) == Some("assistant"));
        let error = last.and_then(|m| m.pointer("/info/error/name")).and_then(Value::as_str);
        Ok(match error {
            Some("MessageAbortedError") => Outcome::Aborted,
            other => Outcome::Finished(other.map(str::to_owned)),
        })
    }
}

fn segment(id: &str) -> String {
    const SEGMENT: &percent_encoding::AsciiSet =
        &percent_encoding::NON_ALPHANUMERIC.remove(b'_').remove(b'-').remove(b'.').remove(b'~');
    percent_encoding::utf8_percent_encode(id, SEGMENT).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::act::target::{plan, resolve};

    fn sessions() -> Sessions {
        let s = |id: &str, parent: Option<&str>, title: &str| Session {
            id: id.into(),
            parent: parent.map(Into::into),
            title: Some(title.into()),
        };
        Sessions {
            list: vec![
                s("ses_root", None, "Fix the build"),
                s("ses_kid", Some("ses_root"), "Long task (@general subagent)"),
                s("ses_grand", Some("ses_kid"), "Deep task (@general subagent)"),
            ],
            busy: ["ses_root", "ses_kid", "ses_grand"].into_iter().map(Into::into).collect(),
        }
    }

    #[test]
    fn sessions_are_found_by_id_or_title_and_stopped_deepest_first() {
        let s = sessions();
        assert_eq!(resolve(&s, "Long task"), Ok(1));
        assert_eq!(resolve(&s, "ses_gr"), Ok(2));
        let levels: Vec<Vec<String>> =
            plan(&s, 0, true).into_iter().map(|l| l.into_iter().map(|x| x.id).collect()).collect();
        assert_eq!(levels, [vec!["ses_grand"], vec!["ses_kid"], vec!["ses_root"]]);
    }

    #[test]
    fn only_plain_http_addresses_are_servers() {
        assert_eq!(Server::new("http://127.0.0.1:4096/").unwrap().authority, "127.0.0.1:4096");
        assert_eq!(Server::new("127.0.0.1:4096").unwrap().authority, "127.0.0.1:4096");
        assert!(Server::new("https://x:1").is_err());
        assert!(Server::new("http://u@x:1").is_err());
        assert!(Server::new("http://x:1/session").is_err());
    }
}
