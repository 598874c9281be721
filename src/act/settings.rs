//! `swarmtop guard --install | --uninstall`: one `PreToolUse` hook entry in a Claude Code
//! `settings.json`, added idempotently and removed alone.
//!
//! The file is the user's: everything but our entry keeps its bytes. Members are read as raw text
//! in their order and written back verbatim; only the `hooks` object and its `PreToolUse` list are
//! laid out again, in the file's own indentation (2 spaces, as Claude Code writes it; a one-line
//! file stays one line), and only when our entry changes.

use std::fmt::Write as _;
use std::path::PathBuf;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use super::hook::spawn_hook;
use crate::source::agents::Env;

/// The settings file the hook goes into, as its agent's record says: the user's, or the project's
/// (the current directory's).
pub fn path(project: bool) -> Result<PathBuf, String> {
    let hook = spawn_hook().ok_or("no agent runs hooks")?;
    let here = if project {
        Some(std::env::current_dir().map_err(|e| format!("finding the current directory: {e}"))?)
    } else {
        None
    };
    (hook.settings)(&Env::from_process(), here.as_deref()).ok_or_else(|| "HOME is not set".to_owned())
}

/// The hook's `matcher`: every tool by which its agent spawns a sub-agent.
pub fn spawn_matcher() -> String {
    spawn_hook().map(|h| h.spawn_tools.join("|")).unwrap_or_default()
}

/// An object's members in their order, values as they were written.
struct Members(Vec<(String, Box<RawValue>)>);

impl<'de> Deserialize<'de> for Members {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Members;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, Box<RawValue>>()? {
                    out.push((k, v));
                }
                Ok(Members(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// A value to write: as it was, or laid out anew.
enum Piece {
    Raw(Box<RawValue>),
    Object(Vec<(String, Piece)>),
    Array(Vec<Piece>),
    New(Value),
}

/// How the file is laid out: one line, or one member a line indented by `unit` per level.
enum Layout {
    OneLine,
    Indented(String),
}

impl Layout {
    fn of(text: &str) -> Self {
        let body = text.trim_start().strip_prefix('{').unwrap_or_default();
        let Some(first) = body.find(|c: char| !c.is_whitespace()) else {
            return Self::Indented("  ".into());
        };
        let gap = &body[..first];
        match gap.rfind('\n') {
            Some(nl) if nl + 1 < gap.len() => Self::Indented(gap[nl + 1..].to_owned()),
            Some(_) => Self::Indented(String::new()),
            None => Self::OneLine,
        }
    }

    fn write(&self, piece: &Piece, level: usize, out: &mut String) {
        match piece {
            Piece::Raw(raw) => out.push_str(raw.get()),
            Piece::New(v) => self.write_new(v, level, out),
            Piece::Object(members) => {
                let items: Vec<(Option<&str>, &Piece)> = members.iter().map(|(k, v)| (Some(k.as_str()), v)).collect();
                self.write_list(('{', '}'), &items, level, out);
            }
            Piece::Array(items) => {
                let items: Vec<(Option<&str>, &Piece)> = items.iter().map(|v| (None, v)).collect();
                self.write_list(('[', ']'), &items, level, out);
            }
        }
    }

    fn write_list(
        &self,
        (open, close): (char, char),
        items: &[(Option<&str>, &Piece)],
        level: usize,
        out: &mut String,
    ) {
        out.push(open);
        for (n, (key, value)) in items.iter().enumerate() {
            if n > 0 {
                out.push(',');
            }
            if let Self::Indented(unit) = self {
                out.push('\n');
                out.push_str(&unit.repeat(level + 1));
            }
            if let Some(k) = key {
                out.push_str(&Value::from(*k).to_string());
                out.push_str(if matches!(self, Self::OneLine) { ":" } else { ": " });
            }
            self.write(value, level + 1, out);
        }
        if let (Self::Indented(unit), false) = (self, items.is_empty()) {
            out.push('\n');
            out.push_str(&unit.repeat(level));
        }
        out.push(close);
    }

    fn write_new(&self, v: &Value, level: usize, out: &mut String) {
        match self {
            Self::OneLine => out.push_str(&v.to_string()),
            Self::Indented(unit) => {
                let mut buf = Vec::new();
                let fmt = serde_json::ser::PrettyFormatter::with_indent(unit.as_bytes());
                let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
                // A `Value` always serialises.
                let _ = v.serialize(&mut ser);
                let text = String::from_utf8_lossy(&buf);
                let pad = format!("\n{}", unit.repeat(level));
                let _ = write!(out, "{}", text.replace('\n', &pad));
            }
        }
    }
}

/// Whether a hook command is a `swarmtop guard` (any binary named swarmtop, any limits).
pub fn is_guard_command(command: &str) -> bool {
    let words = shell_words(command);
    let program = words.first().map(|w| w.rsplit('/').next().unwrap_or(w));
    program.is_some_and(|p| p.starts_with("swarmtop")) && words.get(1).is_some_and(|w| w == "guard")
}

/// Splits a command line as a POSIX shell would for plain words, single and double quotes, and
/// backslashes (enough to recognise the command we write).
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => words.extend(word.take()),
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                w.extend(chars.by_ref().take_while(|&c| c != '\''));
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => w.extend(chars.next()),
                        c => w.push(c),
                    }
                }
            }
            '\\' => word.get_or_insert_with(String::new).extend(chars.next()),
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    words
}

/// A word quoted for a POSIX shell (Claude Code runs hook commands through one).
pub fn shell_quote(word: &str) -> String {
    if !word.is_empty() && word.bytes().all(|b| b.is_ascii_alphanumeric() || b"/._-+=:,@".contains(&b)) {
        return word.to_owned();
    }
    format!("'{}'", word.replace('\'', "'\\''"))
}

/// The `PreToolUse` entry of ours, as a value (to compare) and laid out in the order Claude Code's
/// documentation writes it (`matcher` first).
fn entry(matcher: &str, command: &str) -> (Value, Piece) {
    let value = serde_json::json!({"matcher": matcher, "hooks": [{"type": "command", "command": command}]});
    let new = |s: &str| Piece::New(Value::from(s));
    let hook = Piece::Object(vec![("type".into(), new("command")), ("command".into(), new(command))]);
    let piece = Piece::Object(vec![("matcher".into(), new(matcher)), ("hooks".into(), Piece::Array(vec![hook]))]);
    (value, piece)
}

/// Our hooks taken out of one `PreToolUse` entry: `None` when it holds none; else what is left of
/// it (`None` inside when nothing is) and whether the entry was exactly ours as `wanted`.
fn without_ours(raw: &RawValue, wanted: Option<&Value>) -> Option<(Option<Value>, bool)> {
    let mut v: Value = serde_json::from_str(raw.get()).ok()?;
    let same = wanted == Some(&v);
    let hooks = v.get_mut("hooks")?.as_array_mut()?;
    let before = hooks.len();
    hooks.retain(|h| !h.get("command").and_then(Value::as_str).is_some_and(is_guard_command));
    if hooks.len() == before {
        return None;
    }
    let rest = (!hooks.is_empty()).then_some(v);
    Some((rest, same))
}

/// The file's text with our entry (`Some`) or without it (`None`); `Ok(None)` when the file is
/// right already and must not be written.
pub fn edit(text: Option<&str>, ours: Option<(&str, &str)>) -> Result<Option<String>, String> {
    let text = text.filter(|t| !t.trim().is_empty());
    let Members(mut top) = match text {
        Some(t) => serde_json::from_str(t).map_err(|e| format!("not a JSON object: {e}"))?,
        None => Members(Vec::new()),
    };
    // JSON.parse keeps the last of repeated members, and so does Claude Code.
    let hooks_at = top.iter().rposition(|(k, _)| k == "hooks");
    let Members(hooks) = match hooks_at {
        Some(i) => serde_json::from_str(top[i].1.get()).map_err(|e| format!("\"hooks\" is not an object: {e}"))?,
        None => Members(Vec::new()),
    };
    let pre_at = hooks.iter().rposition(|(k, _)| k == "PreToolUse");
    let entries: Vec<Box<RawValue>> = match pre_at {
        Some(i) => serde_json::from_str(hooks[i].1.get()).map_err(|e| format!("\"PreToolUse\" is not a list: {e}"))?,
        None => Vec::new(),
    };
    let (wanted, piece) = ours.map(|(matcher, command)| entry(matcher, command)).unzip();
    let mut kept = Vec::new();
    let (mut found, mut exact, mut placed) = (0, 0, None);
    for raw in entries {
        match without_ours(&raw, wanted.as_ref()) {
            None => kept.push(Piece::Raw(raw)),
            Some((rest, same)) => {
                found += 1;
                exact += usize::from(same);
                placed.get_or_insert(kept.len());
                kept.extend(rest.map(Piece::New));
            }
        }
    }
    if (found == 0 && wanted.is_none()) || (found == 1 && exact == 1) {
        return Ok(None);
    }
    if let Some(p) = piece {
        // Where our entry was, else last.
        kept.insert(placed.unwrap_or(kept.len()).min(kept.len()), p);
    }
    let mut hooks: Vec<(String, Piece)> = hooks.into_iter().map(|(k, v)| (k, Piece::Raw(v))).collect();
    match (pre_at, kept.is_empty()) {
        (Some(i), true) => drop(hooks.remove(i)),
        (Some(i), false) => hooks[i].1 = Piece::Array(kept),
        (None, true) => {}
        (None, false) => hooks.push(("PreToolUse".into(), Piece::Array(kept))),
    }
    let mut top: Vec<(String, Piece)> = top.drain(..).map(|(k, v)| (k, Piece::Raw(v))).collect();
    match (hooks_at, hooks.is_empty()) {
        (Some(i), true) => drop(top.remove(i)),
        (Some(i), false) => top[i].1 = Piece::Object(hooks),
        (None, true) => {}
        (None, false) => top.push(("hooks".into(), Piece::Object(hooks))),
    }
    let layout = text.map_or(Layout::Indented("  ".into()), Layout::of);
    let mut out = String::new();
    layout.write(&Piece::Object(top), 0, &mut out);
    if text.is_none_or(|t| t.ends_with('\n')) {
        out.push('\n');
    }
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CMD: &str = "/usr/bin/swarmtop guard --max-depth 1";
    const MATCHER: &str = "Agent|Task";

    fn install(text: Option<&str>) -> Option<String> {
        edit(text, Some((MATCHER, CMD))).expect("edits")
    }

    fn uninstall(text: &str) -> Option<String> {
        edit(Some(text), None).expect("edits")
    }

    #[test]
    fn a_new_file_gets_our_entry_alone() {
        let out = install(None).unwrap();
        assert_eq!(
            out,
            "{\n  \"hooks\": {\n    \"PreToolUse\": [\n      {\n        \"matcher\": \"Agent|Task\",\n        \
             \"hooks\": [\n          {\n            \"type\": \"command\",\n            \
             \"command\": \"/usr/bin/swarmtop guard --max-depth 1\"\n          }\n        ]\n      }\n    ]\n  }\n}\n"
        );
        assert_eq!(install(Some(&out)), None, "installing twice changes nothing");
        assert_eq!(uninstall(&out).unwrap(), "{}\n");
    }

    #[test]
    fn the_users_other_settings_and_hooks_keep_their_bytes() {
        let user = "{\n  \"model\": \"opus\",\n  \"permissions\": {\n    \"allow\": [\"Bash(ls:*)\"]\n  },\n  \"hooks\": {\n    \"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"notify-send done\"}]}],\n    \"PreToolUse\": [\n      {\"matcher\": \"Bash\", \"hooks\": [{\"type\": \"command\", \"command\": \"lint\"}]}\n    ]\n  },\n  \"zeta\": 1.50\n}\n";
        let with = install(Some(user)).unwrap();
        assert!(
            with.starts_with(
                "{\n  \"model\": \"opus\",\n  \"permissions\": {\n    \"allow\": [\"Bash(ls:*)\"]\n  },\n"
            )
        );
        assert!(
            with.contains("\"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"notify-send done\"}]}],\n")
        );
        assert!(with.contains(
            "\n      {\"matcher\": \"Bash\", \"hooks\": [{\"type\": \"command\", \"command\": \"lint\"}]},\n"
        ));
        assert!(with.ends_with("  },\n  \"zeta\": 1.50\n}\n"), "{with}");
        assert_eq!(uninstall(&with).unwrap(), user, "uninstall gives the user's file back");
    }

    #[test]
    fn other_limits_replace_our_entry_in_place() {
        let first = install(None).unwrap();
        let other = edit(Some(&first), Some((MATCHER, "swarmtop guard --max-children 3"))).unwrap().unwrap();
        assert!(other.contains("--max-children 3") && !other.contains("--max-depth"));
        assert_eq!(other.matches("swarmtop").count(), 1);
    }

    #[test]
    fn a_shared_entry_loses_only_our_hook() {
        let shared = r#"{"hooks":{"PreToolUse":[{"matcher":"Agent|Task","hooks":[{"type":"command","command":"log-it"},{"type":"command","command":"'/opt/x/swarmtop' guard --max-cost 2"}]}]}}"#;
        let out = uninstall(shared).unwrap();
        assert_eq!(
            out,
            r#"{"hooks":{"PreToolUse":[{"hooks":[{"command":"log-it","type":"command"}],"matcher":"Agent|Task"}]}}"#
        );
        assert_eq!(uninstall(&out), None, "nothing of ours is left");
    }

    #[test]
    fn what_is_not_a_settings_object_is_refused() {
        assert!(edit(Some("[1]"), Some((MATCHER, CMD))).is_err());
        assert!(edit(Some(r#"{"hooks": 3}"#), Some((MATCHER, CMD))).is_err());
        assert!(edit(Some(r#"{"hooks": {"PreToolUse": {}}}"#), None).is_err());
    }

    #[test]
    fn guard_commands_are_recognised_however_quoted() {
        assert!(is_guard_command("swarmtop guard"));
        assert!(is_guard_command("'/home/a b/.cargo/bin/swarmtop' guard --max-depth 2"));
        assert!(is_guard_command("\"/x/swarmtop\" guard"));
        assert!(!is_guard_command("swarmtop stats x"));
        assert!(!is_guard_command("echo swarmtop guard"));
        assert_eq!(shell_quote("/a b/it's"), "'/a b/it'\\''s'");
        assert_eq!(shell_words(&shell_quote("/a b/it's")), vec!["/a b/it's".to_owned()]);
    }
}
