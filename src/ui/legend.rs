//! What every glyph and mark on the screen means, for the `?` overlay. The status glyphs come
//! from [`Shown::glyph`] itself, so the legend cannot drift from the rows; a test reads the
//! screen's source and fails on a mark drawn somewhere that the legend does not explain.

use ratatui::style::Style;

use super::status::Shown;
use super::theme::Theme;
use crate::model::Status;

/// One mark and what it means, in the style the screen draws it.
pub struct Mark {
    pub glyph: &'static str,
    pub meaning: &'static str,
    pub style: Style,
}

/// A group of marks under a title (`Status`, `Timeline (t)`, …).
pub struct Group {
    pub title: &'static str,
    pub marks: Vec<Mark>,
}

/// Every status a row can show, and what it means. One per state: `ui::status::Shown` lists them
/// all and this match has no wildcard, so a new state cannot go without its line.
fn status_meaning(shown: Shown) -> &'static str {
    match shown {
        Shown::Is(Status::Running) => "running",
        Shown::OnChildren(_) => "waiting on its sub-agents",
        Shown::NeedsYou(_) | Shown::Is(Status::Waiting) => "needs you: an approval or an answer",
        Shown::Is(Status::Retrying) => "retrying after an error",
        Shown::Stalled => "stalled: quiet, and all below it, for --stall",
        Shown::Done | Shown::Is(Status::Idle) => "done; a session: idle, between prompts",
        Shown::Is(Status::Failed) => "failed",
        Shown::Is(Status::Interrupted) => "interrupted",
        Shown::Unfinished => "unfinished: the stream ended while it ran",
        Shown::Is(Status::Pending) => "pending: seen before its parent named it",
        Shown::Is(Status::Closed) => "closed by its parent",
    }
}

/// One of each state, in the order the legend lists them.
const STATES: [Shown; 11] = [
    Shown::Is(Status::Running),
    Shown::OnChildren(1),
    Shown::NeedsYou(None),
    Shown::Is(Status::Retrying),
    Shown::Stalled,
    Shown::Done,
    Shown::Is(Status::Failed),
    Shown::Is(Status::Interrupted),
    Shown::Unfinished,
    Shown::Is(Status::Pending),
    Shown::Is(Status::Closed),
];

fn mark(glyph: &'static str, meaning: &'static str, style: Style) -> Mark {
    Mark { glyph, meaning, style }
}

/// The legend, by where the marks are drawn.
pub fn groups(theme: &Theme) -> Vec<Group> {
    let status = STATES.iter().map(|&s| mark(s.glyph(), status_meaning(s), theme.status(s))).collect();
    vec![
        Group { title: "Status (a glyph and a word)", marks: status },
        Group {
            title: "Tree",
            marks: vec![
                mark("▾ ▸", "open / folded (←→)", theme.dim),
                mark("├ └ │", "a row's place under its parent", theme.dim),
                mark("⑂", "a card: the parent's spawn, wait, send or close", theme.tool),
                mark("turn", "a session's prompt; ● ✓ ✗ ◼ how it ended", theme.base),
                mark("?", "unattributed: threads no parent claimed", theme.warn),
                mark("—", "unpriced: tokens with no price", theme.dim),
                mark("*", "the agent's own cost (the price table lacks it)", theme.cost),
                mark("dim", "an ended session (machine view)", theme.dim),
            ],
        },
        Group {
            title: "Timeline (t)",
            marks: vec![
                mark("━", "a turn, coloured by how it ended", theme.running),
                mark("┃", "a tool call", theme.tool),
                mark("▒", "waiting on its sub-agents", theme.waiting),
                mark("✗", "the turn failed", theme.failed),
                mark("╵", "a time mark", theme.dim),
            ],
        },
        Group {
            title: "Lanes",
            marks: vec![
                mark("›", "a prompt", theme.user),
                mark("$", "a command (exit N when it failed)", theme.command),
                mark("✎", "a file change", theme.tool),
                mark("⚙", "a tool call", theme.tool),
                mark("⌕", "a web search", theme.tool),
                mark("⑂", "a call to a sub-agent, → who", theme.tool),
                mark("≡", "a plan", theme.tool),
                mark("▣", "an image", theme.tool),
                mark("·", "a note (context compacted, a report)", theme.dim),
                mark("✗ ↻", "the error it failed on / retries", theme.error),
                mark("↻ retried", "got through after an error", theme.retrying),
                mark("quiet 12s", "no line from it for that long", theme.warn),
                mark("(agent)", "the agent's own cost figure", theme.cost),
                mark("↑12", "scrolled back 12 rows", theme.warn),
                mark("◇", "history: files gone, opens from the store", theme.base),
                mark("⊘", "history: acted on (interrupted, refused by a guard)", theme.warn),
            ],
        },
        Group {
            title: "Header and cost",
            marks: vec![
                mark("● ○", "live / watching (machine view)", theme.running),
                mark("▶ ‖", "replaying at a speed / paused", theme.running),
                mark("◌ ■", "connecting / ended", theme.dim),
                mark("⚠", "a routing problem: d tells", theme.warn),
                mark("━─", "how far the replay is", theme.gauge),
                mark("▁▃▇", "burn: cost per second, last two minutes", theme.spark),
                mark("█░", "context window used", theme.gauge),
                mark("▼", "the order: a table's column, the tree's (o)", theme.key),
            ],
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Marks the screen draws that are not marks to explain: separators, ellipses, the typing
    /// cursor, the names of keys, box borders and the guides' parts, the help's own arrows.
    const NOT_MARKS: &str = "…×–·▏⏎←→↑↓⌫┌┐└┘─│├╵▸▾•";

    /// The screen's source files, its folders' too.
    fn sources(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("a source folder") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                sources(&path, out);
            } else if path.file_name().is_some_and(|n| n != "legend.rs") {
                out.push(path);
            }
        }
    }

    /// Every non-ASCII character inside a string literal of the screen's source.
    fn drawn() -> Vec<(char, String)> {
        let mut files = Vec::new();
        sources(std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src/ui")), &mut files);
        let mut out = Vec::new();
        for path in files {
            let text = std::fs::read_to_string(&path).expect("source");
            // Only code: a test module's strings are not drawn.
            let code = text.split("#[cfg(test)]").next().unwrap_or("");
            for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
                let mut inside = false;
                for c in line.chars() {
                    if c == '"' {
                        inside = !inside;
                    } else if inside && !c.is_ascii() && !c.is_alphabetic() {
                        out.push((c, path.display().to_string()));
                    }
                }
            }
        }
        out
    }

    #[test]
    fn every_mark_the_screen_draws_is_in_the_legend() {
        let legend: String = groups(&Theme::no_color())
            .iter()
            .flat_map(|g| g.marks.iter().map(|m| m.glyph))
            .collect::<Vec<_>>()
            .join(" ");
        let missing: Vec<(char, String)> =
            drawn().into_iter().filter(|(c, _)| !legend.contains(*c) && !NOT_MARKS.contains(*c)).collect();
        assert!(missing.is_empty(), "marks without a legend line: {missing:?}");
    }

    #[test]
    fn every_status_has_its_glyph_and_a_meaning() {
        let glyphs: Vec<&str> = STATES.iter().map(|s| s.glyph()).collect();
        for g in ["●", "◷", "⚑", "↻", "◔", "✓", "✗", "◼", "◌", "○", "·"] {
            assert!(glyphs.contains(&g), "{g}");
        }
    }
}
