//! `swarmtop search TEXT`: full text over what every stored run was asked, answered and did
//! (item text, capped as the store keeps it), best matches first.

use std::io::IsTerminal as _;
use std::process::ExitCode;

use color_eyre::eyre::{Result, eyre};
use jiff::tz::TimeZone;
use serde::Serialize;

use super::cli::{GlobalOpts, SearchArgs};
use super::report::filter;
use super::table::{self, Cut, Spec, terminal_width};
use crate::pipeline::Config;
use crate::store::query;
use crate::store::rows::Hit;
use crate::wire::fact::ItemKind;

pub fn run(args: &SearchArgs, config: Config, global: &GlobalOpts) -> Result<ExitCode> {
    let (filter, tz) = filter(&args.filter)?;
    let words = words(&args.text.join(" ")).ok_or_else(|| eyre!("search: give words to find"))?;
    let store = super::sync::synced(&args.filter.store, args.filter.no_sync, config, global)?;
    let hits = store.backend().search(&words, &filter, args.limit)?;
    let out = if args.json {
        render_json(&hits, &tz)
    } else {
        render_text(&hits, &tz, terminal_width(), std::io::stdout().is_terminal())
    };
    super::print(out.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// The words to find, every one of them (`None`: there are none).
pub(super) fn words(text: &str) -> Option<Vec<String>> {
    let words: Vec<String> = text.split_whitespace().map(str::to_owned).collect();
    (!words.is_empty()).then_some(words)
}

#[derive(Serialize)]
struct SearchJson<'a> {
    hits: Vec<HitJson<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct HitJson<'a> {
    session: Option<&'a str>,
    agent: &'a str,
    thread: &'a str,
    name: &'a str,
    kind: &'a str,
    /// The call's own tool name, as its agent calls it.
    #[serde(skip_serializing_if = "Option::is_none")]
    tool: Option<&'a str>,
    time: Option<String>,
    snippet: String,
    /// The machine that ran it (a team store's).
    #[serde(skip_serializing_if = "Option::is_none")]
    machine: Option<&'a str>,
}

/// The snippet as text, the matched words between `open` and `close`.
fn snippet(hit: &Hit, open: &str, close: &str) -> String {
    hit.snippet
        .iter()
        .map(|(text, matched)| if *matched { format!("{open}{text}{close}") } else { text.to_string() })
        .collect()
}

pub(super) fn render_json(hits: &[Hit], tz: &TimeZone) -> String {
    let json = SearchJson {
        hits: hits
            .iter()
            .map(|h| HitJson {
                session: h.session.as_ref().map(crate::wire::Clean::as_str),
                agent: h.agent.as_str(),
                thread: h.thread.as_str(),
                name: h.name.as_str(),
                kind: h.kind.as_str(),
                tool: h.tool.as_ref().map(crate::wire::Clean::as_str),
                time: h.at_ms.and_then(|t| query::rfc3339(t, tz)),
                snippet: snippet(h, "", ""),
                machine: h.machine.as_ref().map(crate::wire::Clean::as_str),
            })
            .collect(),
    };
    let mut out = serde_json::to_string(&json).expect("hits serialise");
    out.push('\n');
    out
}

/// Matches in bold on a terminal; between `[` and `]` in a pipe.
fn render_text(hits: &[Hit], tz: &TimeZone, limit: Option<usize>, terminal: bool) -> String {
    if hits.is_empty() {
        return "no match in the run store\n".to_owned();
    }
    let (open, close) = if terminal { ("\u{1b}[1m", "\u{1b}[22m") } else { ("[", "]") };
    // A team store's hits say which machine ran them, after the agent.
    let fleet = hits.iter().any(|h| h.machine.is_some());
    let mut specs = super::report::leading("TIME", fleet);
    specs.extend([
        Spec::word("SESSION", 4).cut(Cut::Tail, 18),
        Spec::word("AGENT NAME", 3).cut(Cut::Tail, 10),
        Spec::word("KIND", 2),
        Spec::word("SNIPPET", 19).cut(Cut::Tail, 20),
    ]);
    let rows: Vec<Vec<String>> = hits
        .iter()
        .map(|h| {
            let machine = fleet.then(|| h.machine.as_ref().map_or_else(|| "?".to_owned(), ToString::to_string));
            [h.at_ms.map_or_else(|| "?".to_owned(), |t| super::report::second(t, tz)), h.agent.to_string()]
                .into_iter()
                .chain(machine)
                .chain(rest(h))
                .collect()
        })
        .collect();
    // The marks are placed after the table is laid out: an escape sequence has no width.
    // A cut snippet may end inside a match: its line closes the mark, so bold never runs on.
    let mut out = String::new();
    for line in table::render(&specs, &rows, limit).lines() {
        let unclosed = line.matches('\u{e000}').count() > line.matches('\u{e001}').count();
        out.push_str(&line.replace('\u{e000}', open).replace('\u{e001}', close));
        if unclosed {
            out.push_str(close);
        }
        out.push('\n');
    }
    out
}

/// A hit's cells after its agent (and machine).
fn rest(h: &Hit) -> Vec<String> {
    vec![
        h.session.as_ref().map_or_else(|| "-".to_owned(), ToString::to_string),
        h.name.to_string(),
        kind_words(h),
        snippet(h, "\u{e000}", "\u{e001}"),
    ]
}

/// What the hit is, in its agent's words: the call's own tool name (`Bash`, `task`), else the
/// kind in plain words (`message`, `command`), never Codex's type name for another agent's item.
fn kind_words(h: &Hit) -> String {
    match &h.tool {
        Some(tool) => tool.to_string(),
        None => ItemKind::of(h.kind.as_str()).word().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::words;

    #[test]
    fn words_are_what_is_between_spaces() {
        assert_eq!(words(" cargo  test ").unwrap(), ["cargo", "test"]);
        assert_eq!(words("say \"hi\"").unwrap(), ["say", "\"hi\""]);
        assert_eq!(words("  "), None);
    }
}
