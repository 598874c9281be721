//! What an agent is called, in one label everywhere (tree, lanes, timeline, cost table, `stats`,
//! `tree`, `ps`). A child's nickname often arrives late or never (with `thread/read` only), so
//! until then it is named by what was known when it was spawned: its role, the agent type, or the
//! task in its spawn prompt; once it has a nickname, the role stays beside it (`Tesla
//! (planner)`): the first name is never lost. A root is named by its first prompt. The id is no
//! part of a name (`y` copies it; `stats --json` has it).

use crate::model::{ItemKind, Model, Thread, short_id};
use crate::router::ThreadIdx;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Label {
    pub name: String,
    /// The short id, when the name is not already it.
    pub id: Option<String>,
}

pub fn of(model: &Model, idx: ThreadIdx) -> Label {
    let t = model.thread(idx);
    let own = t.nickname.is_some() || t.agent_path.is_some();
    if own {
        // Its own name, and the role it was spawned as when that says more (`Tesla (planner)`).
        let name = t.name();
        let role = t.parent.and_then(|_| role_of(model, t)).filter(|r| !r.eq_ignore_ascii_case(&name));
        let name = match role {
            Some(role) => format!("{name} ({role})"),
            None => name,
        };
        return Label { name, id: Some(short_id(&t.id)) };
    }
    let known = if t.parent.is_some() { spawned_as(model, t) } else { first_prompt(t).map(task_name) };
    match known {
        Some(name) => Label { name, id: Some(short_id(&t.id)) },
        None => Label { name: t.name(), id: None },
    }
}

/// The role its parent gave it, when that is a name, not a sentence: a tag leading its spawn
/// prompt (`[task:planner] …`, `planner: …`), what the screen called it from its first moment.
/// The kind of agent it is (`general-purpose`, `worker`) is no role: every sibling shares it.
fn role_of(model: &Model, t: &Thread) -> Option<String> {
    let line = first_line(card_of(model, t)?.title.as_str())?;
    let name = task_name(line);
    (name != line).then_some(name)
}

/// The card its parent spawned it with.
fn card_of<'m>(model: &'m Model, t: &Thread) -> Option<&'m crate::model::Item> {
    model.threads.get(t.parent?.index())?.item(t.card.as_deref()?)
}

/// Widest name the text outputs (`tree`, `stats`) print: a root is named by its first prompt.
const TEXT_NAME: usize = 40;

/// A thread as the text outputs name it: its label, as the screen shows it.
pub fn text(model: &Model, idx: ThreadIdx) -> String {
    super::text::truncate(&of(model, idx).name, TEXT_NAME)
}

/// A session's root as the machine view and `ps` name it: its label (the session id says nothing
/// a person reads), else its project's folder, else its short id.
pub fn session(model: &Model, idx: ThreadIdx, project: Option<&str>) -> String {
    let label = of(model, idx);
    match (label.id, project) {
        // No name but the id: the project's folder says more.
        (None, Some(project)) => project.to_owned(),
        _ => label.name,
    }
}

/// Its role (see [`role_of`]), the kind of agent it is, or the first line of the prompt the parent
/// spawned it with.
fn spawned_as(model: &Model, t: &Thread) -> Option<String> {
    if let Some(role) = role_of(model, t) {
        return Some(role);
    }
    if let Some(role) = t.agent_role.as_ref().filter(|r| !r.is_empty()) {
        return Some(role.to_string());
    }
    let card = card_of(model, t)?;
    if let Some(kind) = card.agent_type().filter(|k| !k.is_empty()) {
        return Some(kind.to_string());
    }
    first_line(card.title.as_str()).map(task_name)
}

/// A short name for a task from the first line of its prompt: a leading tag (`[task:scout] …`,
/// `[tester] …`) names it; otherwise its first words do.
pub fn task_name(line: &str) -> String {
    if let Some(rest) = line.strip_prefix('[') {
        if let Some((tag, _)) = rest.split_once(']') {
            let name = tag.rsplit(':').next().unwrap_or(tag).trim();
            if !name.is_empty() && name.len() <= 32 {
                return name.to_owned();
            }
        }
    }
    // `scout: map the callers`: a one-word lead before a colon.
    if let Some((head, rest)) = line.split_once(':') {
        if !head.is_empty() && head.len() <= 24 && !head.contains(char::is_whitespace) && !rest.starts_with("//") {
            return head.to_owned();
        }
    }
    line.to_owned()
}

/// The first line of the user message that opened the thread's first turn.
pub fn first_prompt(t: &Thread) -> Option<&str> {
    prompt_of_turn(t, 0)
}

/// The first line of the user message that opened a turn, if the turn starts with one. Context
/// the client wraps in a tag and sends as a user message (`<environment_context>` in rollouts)
/// is not what a person asked: the prompt is the first user message after it.
pub fn prompt_of_turn(t: &Thread, turn: usize) -> Option<&str> {
    let items = &t.turns.get(turn)?.items;
    items
        .iter()
        .take(PROMPT_SEARCH)
        .filter_map(|&i| t.items.get(i))
        .take_while(|item| item.kind == ItemKind::UserMessage)
        .map(|item| item.text.as_str())
        .find(|text| !is_envelope(text))
        .and_then(first_line)
}

/// Items at the start of a turn looked at for its prompt.
const PROMPT_SEARCH: usize = 4;

/// `<environment_context>…`, `<subagent_notification …>`: a tagged block, not a prompt.
fn is_envelope(text: &str) -> bool {
    let Some(rest) = text.trim_start().strip_prefix('<') else { return false };
    let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-').collect();
    name.starts_with(|c: char| c.is_ascii_alphabetic()) && rest[name.len()..].starts_with(['>', ' '])
}

fn first_line(s: &str) -> Option<&str> {
    s.lines().map(str::trim).find(|l| !l.is_empty())
}

#[cfg(test)]
mod tests {
    use super::task_name;

    #[test]
    fn a_leading_tag_names_the_task() {
        assert_eq!(task_name("[task:scout] Find every call site"), "scout");
        assert_eq!(task_name("[tester] run the suite"), "tester");
        assert_eq!(task_name("Review src/http/middleware.rs"), "Review src/http/middleware.rs");
        assert_eq!(task_name("[] odd"), "[] odd");
        assert_eq!(task_name("CHILD-TASK-1: run a command"), "CHILD-TASK-1");
        assert_eq!(task_name("see https://example.com"), "see https://example.com");
        assert!(super::is_envelope("<environment_context>\n  <cwd>/x</cwd>"));
        assert!(super::is_envelope("<subagent_notification agent=\"a\">done"));
        assert!(!super::is_envelope("<3 this code"));
        assert!(!super::is_envelope("fix the parser"));
    }
}
