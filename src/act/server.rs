//! An agent's session server, acted on through its own API (the agent's record says how:
//! `source::agents::control::ServerApi`; `docs/acting.md` §5 for OpenCode 1.18.33 under
//! `opencode serve`, the one agent that serves its sessions). A session is busy while the server
//! says so; its abort is the server's own, and the server says how the session then ended.

use std::collections::HashSet;
use std::time::Duration;

use serde_json::Value;

use super::target::Tree;
use crate::source::agents::control::{Http, Outcome, ServedSession, ServerApi};
use crate::source::agents::{AGENTS, Window};
use crate::source::census::{Census, Options, Wants};
use crate::source::seen::Trouble;

/// The servers running as us, as the machine view finds them (`HOST:PORT`, and the pid of the
/// process listening): beside the stores of the agents that keep their sessions in one (the
/// registry's), whatever their age.
pub fn running() -> Vec<(String, u32)> {
    let opts = Options::machine(Window::all());
    let mut wants = Wants::default();
    for agent in AGENTS.iter().filter(|a| a.store.is_some()) {
        let Some(place) = &agent.place else { continue };
        let Some(root) = (place.root)(&opts.env) else { continue };
        for c in (place.scan)(&root, &opts.window, &mut Trouble::default()) {
            wants.candidate(&c);
        }
    }
    Census::take(&opts, &wants).servers().into_iter().map(|(_, s)| (s.authority, s.pid)).collect()
}

/// The server APIs the registry's agents have.
pub fn apis() -> impl Iterator<Item = &'static ServerApi> {
    AGENTS.iter().filter_map(|a| a.control.server.as_ref())
}

/// How long one request to the server may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Most bytes read of one answer (a session's messages can be long).
const ANSWER_BYTES: u64 = 64 << 20;

/// A server's sessions and which of them are busy.
#[derive(Debug, Default)]
pub struct Sessions {
    pub list: Vec<ServedSession>,
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
        self.list[i].names.clone()
    }

    fn children(&self, i: usize) -> Vec<usize> {
        let id = &self.list[i].id;
        (0..self.list.len()).filter(|&c| self.list[c].parent.as_ref() == Some(id)).collect()
    }

    fn running(&self, i: usize) -> Option<String> {
        self.busy.contains(&self.list[i].id).then(String::new)
    }
}

pub struct Server {
    /// `HOST:PORT`.
    pub authority: String,
    pub api: &'static ServerApi,
    /// The process serving, when it was found running.
    pub pid: Option<u32>,
    agent: ureq::Agent,
}

impl Http for Server {
    fn get(&self, path: &str) -> Result<Value, String> {
        self.json("GET", path)
    }

    fn post(&self, path: &str) -> Result<Value, String> {
        self.json("POST", path)
    }
}

impl Server {
    /// `http://HOST:PORT` (a trailing `/` allowed) or `HOST:PORT`, spoken to through `api`.
    pub fn new(url: &str, api: &'static ServerApi) -> Result<Self, String> {
        let authority = url.strip_prefix("http://").unwrap_or(url).trim_end_matches('/');
        if authority.is_empty() || authority.contains(['/', '?', '#', '@']) || url.starts_with("https://") {
            return Err(format!("not an agent server's address (http://HOST:PORT): {url}"));
        }
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(REQUEST_TIMEOUT))
            .user_agent(concat!("swarmtop/", env!("CARGO_PKG_VERSION")))
            .build();
        Ok(Self { authority: authority.to_owned(), api, pid: None, agent: config.into() })
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
        Ok(Sessions { list: (self.api.sessions)(self)?, busy: (self.api.busy)(self)? })
    }

    /// The server's own abort of a session.
    pub fn abort(&self, id: &str) -> Result<(), String> {
        (self.api.abort)(self, id)
    }

    /// How the session stands: running while the server says it is busy, else how it ended.
    pub fn outcome(&self, id: &str) -> Result<Outcome, String> {
        if (self.api.busy)(self)?.contains(id) {
            return Ok(Outcome::Running);
        }
        (self.api.ended)(self, id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::act::target::{plan, resolve};

    fn sessions() -> Sessions {
        let s = |id: &str, parent: Option<&str>, title: &str| ServedSession {
            id: id.into(),
            parent: parent.map(Into::into),
            names: vec![title.into(), title.split(" (@").next().unwrap().into()],
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
        let api = apis().next().expect("an agent serves its sessions");
        assert_eq!(Server::new("http://127.0.0.1:4096/", api).unwrap().authority, "127.0.0.1:4096");
        assert_eq!(Server::new("127.0.0.1:4096", api).unwrap().authority, "127.0.0.1:4096");
        assert!(Server::new("https://x:1", api).is_err());
        assert!(Server::new("http://u@x:1", api).is_err());
        assert!(Server::new("http://x:1/session", api).is_err());
    }
}
