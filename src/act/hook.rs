//! Claude Code's `PreToolUse` hook protocol, as the real 2.1.332 speaks it (checked offline; see
//! `docs/acting.md` §1): one JSON object on the hook's stdin, and for a refusal one JSON object
//! on its stdout.
//!
//! What arrives: `session_id`, `transcript_path` (the **session's** transcript, also when a
//! sub-agent calls), `cwd`, `hook_event_name`, `tool_name`, `tool_input`, `tool_use_id`, and, only
//! when a sub-agent is the caller, its `agent_id` and `agent_type`. A refusal is
//! `hookSpecificOutput.permissionDecision: "deny"` with a `permissionDecisionReason`, which the CLI
//! honours even under `--dangerously-skip-permissions` and hands to the model as the call's error
//! result (`PreToolUse:Agent hook error: <reason>`). Exit status 2 with the reason on stderr is
//! honoured too, but the model then reads the hook's whole command line before the reason.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::source::agents::{AGENTS, SpawnHook};

/// The agent whose hook this is: the registry's one agent that runs hooks before tool calls.
pub fn spawn_hook() -> Option<&'static SpawnHook> {
    AGENTS.iter().find_map(|a| a.control.hook.as_ref())
}

/// Most bytes read from the hook's stdin: a spawn's input is a prompt, which a model writes; a
/// larger input is refused as bad input rather than held.
pub const MAX_INPUT_BYTES: usize = 8 << 20;

/// The members of the hook's input the guard reads; others are ignored.
#[derive(Debug, Deserialize)]
pub struct HookInput {
    #[serde(default)]
    pub hook_event_name: Option<String>,
    pub tool_name: String,
    pub session_id: String,
    pub transcript_path: PathBuf,
    #[serde(default)]
    pub tool_use_id: Option<String>,
    /// The calling sub-agent; absent when the session itself calls.
    #[serde(default)]
    pub agent_id: Option<String>,
}

impl HookInput {
    pub fn parse(bytes: &[u8]) -> Result<Self, String> {
        serde_json::from_slice(bytes).map_err(|e| format!("the hook's input is not a tool call's: {e}"))
    }

    /// Whether the call asks for a sub-agent (any other call passes untouched).
    pub fn spawns(&self) -> bool {
        self.hook_event_name.as_deref().is_none_or(|e| e == "PreToolUse")
            && spawn_hook().is_some_and(|h| h.spawn_tools.contains(&self.tool_name.as_str()))
    }

    /// The session's transcripts and which agent calls. `transcript_path` names the session's
    /// file in 2.1.332; should a CLI name the sub-agent's own file
    /// (`<session>/subagents/agent-<id>.jsonl`), the session is found above it and the caller in
    /// its name.
    pub fn transcripts(&self) -> Result<Transcripts, String> {
        let path = &self.transcript_path;
        if !path.is_absolute() {
            return Err(format!("transcript_path is not absolute: {}", crate::wire::Clean::path(path)));
        }
        let own =
            path.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_prefix("agent-")?.strip_suffix(".jsonl"));
        let in_subagents = path.parent().is_some_and(|p| p.file_name().is_some_and(|n| n == "subagents"));
        if let (Some(id), true) = (own, in_subagents) {
            let folder = path.parent().and_then(Path::parent).ok_or("transcript_path has no session folder")?;
            let session_file = folder.with_extension("jsonl");
            let caller = Caller::Agent(self.agent_id.clone().unwrap_or_else(|| id.to_owned()));
            return Ok(Transcripts { session_file, folder: folder.to_owned(), caller });
        }
        let caller = match &self.agent_id {
            Some(id) => Caller::Agent(id.clone()),
            None => Caller::Session(self.session_id.clone()),
        };
        Ok(Transcripts { session_file: path.clone(), folder: path.with_extension(""), caller })
    }
}

/// Who makes the call: the session itself, or one of its sub-agents (at any depth).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    Session(String),
    Agent(String),
}

impl Caller {
    /// The caller's thread id in the model (a session's id, or a sub-agent's).
    pub fn thread_id(&self) -> &str {
        match self {
            Self::Session(id) | Self::Agent(id) => id,
        }
    }
}

/// Where a session's transcripts are: its own file and its folder of sub-agents' files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transcripts {
    pub session_file: PathBuf,
    pub folder: PathBuf,
    pub caller: Caller,
}

impl Transcripts {
    /// The inputs `stats` would be given for this session: the file, and the folder when there is
    /// one (a session that spawned nothing yet has none).
    pub fn inputs(&self) -> Vec<PathBuf> {
        let mut inputs = vec![self.session_file.clone()];
        if self.folder.is_dir() {
            inputs.push(self.folder.clone());
        }
        inputs
    }
}

/// The refusal Claude Code honours and shows the model (on stdout, exit status 0).
pub fn deny(reason: &str) -> String {
    let out = serde_json::json!({
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    });
    format!("{out}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    const SESSION: &str = "638896dc-13ed-4459-9c22-f25ae2b574fa";

    fn input(extra: &str, path: &str) -> HookInput {
        let text = format!(
            r#"{{"session_id":"{SESSION}","transcript_path":"{path}","cwd":"/p","hook_event_name":"PreToolUse","tool_name":"Agent","tool_input":{{"prompt":"x"}},"tool_use_id":"toolu_1"{extra}}}"#
        );
        HookInput::parse(text.as_bytes()).expect("parses")
    }

    #[test]
    fn the_session_calls_when_no_agent_is_named() {
        let i = input("", &format!("/h/.claude/projects/p/{SESSION}.jsonl"));
        assert!(i.spawns());
        let t = i.transcripts().unwrap();
        assert_eq!(t.caller, Caller::Session(SESSION.into()));
        assert_eq!(t.folder, PathBuf::from(format!("/h/.claude/projects/p/{SESSION}")));
    }

    #[test]
    fn a_sub_agent_is_found_by_its_id_or_by_its_own_file() {
        let session_file = format!("/h/.claude/projects/p/{SESSION}.jsonl");
        let t = input(r#","agent_id":"ac84e3ba07d5eb5d5""#, &session_file).transcripts().unwrap();
        assert_eq!(t.caller, Caller::Agent("ac84e3ba07d5eb5d5".into()));
        let own = format!("/h/.claude/projects/p/{SESSION}/subagents/agent-aa05902d2da2bb067.jsonl");
        let t = input("", &own).transcripts().unwrap();
        assert_eq!(t.caller, Caller::Agent("aa05902d2da2bb067".into()));
        assert_eq!(t.session_file, PathBuf::from(session_file));
    }

    #[test]
    fn other_tools_and_events_are_not_spawns() {
        let mut i = input("", "/x.jsonl");
        i.tool_name = "Bash".into();
        assert!(!i.spawns());
        i.tool_name = "Task".into();
        assert!(i.spawns());
        i.hook_event_name = Some("PostToolUse".into());
        assert!(!i.spawns());
    }

    #[test]
    fn bad_input_is_an_error_not_a_decision() {
        assert!(HookInput::parse(b"not json").is_err());
        assert!(HookInput::parse(br#"{"tool_name":"Agent"}"#).is_err());
        assert!(input("", "relative.jsonl").transcripts().is_err());
    }

    #[test]
    fn a_refusal_is_the_json_the_cli_honours() {
        let v: serde_json::Value = serde_json::from_str(&deny("depth 2 > 1")).unwrap();
        assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny");
        assert_eq!(v["hookSpecificOutput"]["permissionDecisionReason"], "depth 2 > 1");
    }
}
