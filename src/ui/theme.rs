//! Named styles. Widgets ask for `theme.failed` or `theme.dim`, never for a colour, so a theme is
//! one table and `NO_COLOR` is one more table (where status still reads from the glyph). Which
//! table is chosen by the command that reads the options and the environment.

use ratatui::style::{Color, Modifier, Style};

use super::status::Shown;
use crate::model::Status;

#[derive(Debug, Clone)]
pub struct Theme {
    pub name: &'static str,
    pub base: Style,
    pub dim: Style,
    pub bold: Style,
    pub title: Style,
    pub border: Style,
    pub border_focus: Style,
    pub selected: Style,
    /// The selected row of a pane that does not have the focus.
    pub selected_idle: Style,
    pub header: Style,
    pub brand: Style,
    pub key: Style,
    pub warn: Style,
    pub error: Style,
    pub cost: Style,
    pub model: Style,
    pub user: Style,
    pub reasoning: Style,
    pub command: Style,
    pub output: Style,
    pub diff_add: Style,
    pub diff_del: Style,
    pub tool: Style,
    pub gauge: Style,
    pub spark: Style,
    pub running: Style,
    /// A parent quiet while its children work: alive, not the news.
    pub running_quiet: Style,
    pub waiting: Style,
    pub retrying: Style,
    pub done: Style,
    pub failed: Style,
    pub interrupted: Style,
    pub closed: Style,
    pub pending: Style,
    pub stalled: Style,
    /// A match of the text search.
    pub search: Style,
}

impl Theme {
    /// The default: the terminal's own background, colour for status and emphasis only. Greys
    /// come from the 256-colour ramp, not palette colour 8 (`DarkGray`), which several terminal
    /// themes set to the background colour or close to it.
    pub fn dark() -> Self {
        let fg = |c| Style::new().fg(c);
        let grey = Color::Indexed(245);
        let faint = Color::Indexed(240);
        Self {
            name: "dark",
            base: Style::new(),
            dim: fg(grey),
            bold: Style::new().add_modifier(Modifier::BOLD),
            title: Style::new().add_modifier(Modifier::BOLD),
            border: fg(faint),
            border_focus: fg(Color::Cyan),
            selected: Style::new().bg(Color::Rgb(38, 52, 74)).add_modifier(Modifier::BOLD),
            selected_idle: Style::new().bg(Color::Rgb(40, 40, 40)),
            header: Style::new(),
            brand: fg(Color::Cyan).add_modifier(Modifier::BOLD),
            key: fg(Color::Cyan).add_modifier(Modifier::BOLD),
            warn: fg(Color::Yellow).add_modifier(Modifier::BOLD),
            error: fg(Color::Red),
            cost: fg(Color::Green),
            model: fg(Color::Blue),
            user: fg(Color::Cyan).add_modifier(Modifier::BOLD),
            reasoning: fg(grey).add_modifier(Modifier::ITALIC),
            command: fg(Color::Yellow),
            output: fg(Color::Gray),
            diff_add: fg(Color::Green),
            diff_del: fg(Color::Red),
            tool: fg(Color::Magenta),
            gauge: fg(Color::Cyan),
            spark: fg(Color::Green),
            running: fg(Color::Green).add_modifier(Modifier::BOLD),
            running_quiet: fg(Color::Cyan),
            waiting: fg(Color::Yellow).add_modifier(Modifier::BOLD),
            retrying: fg(Color::Magenta).add_modifier(Modifier::BOLD),
            done: fg(Color::Green),
            failed: fg(Color::Red).add_modifier(Modifier::BOLD),
            interrupted: fg(Color::LightRed),
            closed: fg(grey),
            pending: fg(grey),
            stalled: fg(Color::Yellow),
            search: Style::new().fg(Color::Black).bg(Color::Yellow),
        }
    }

    /// For light backgrounds: darker hues; greys dark enough to read on white.
    pub fn light() -> Self {
        let fg = |c| Style::new().fg(c);
        let grey = Color::Rgb(110, 110, 110);
        Self {
            name: "light",
            dim: fg(grey),
            border: fg(Color::Rgb(170, 170, 170)),
            border_focus: fg(Color::Blue),
            selected: Style::new().bg(Color::Rgb(210, 225, 245)).add_modifier(Modifier::BOLD),
            selected_idle: Style::new().bg(Color::Rgb(232, 232, 232)),
            brand: fg(Color::Blue).add_modifier(Modifier::BOLD),
            key: fg(Color::Blue).add_modifier(Modifier::BOLD),
            warn: fg(Color::Rgb(160, 90, 0)).add_modifier(Modifier::BOLD),
            cost: fg(Color::Rgb(0, 110, 0)),
            user: fg(Color::Blue).add_modifier(Modifier::BOLD),
            reasoning: fg(grey).add_modifier(Modifier::ITALIC),
            command: fg(Color::Rgb(150, 90, 0)),
            output: fg(Color::Rgb(60, 60, 60)),
            diff_add: fg(Color::Rgb(0, 120, 0)),
            gauge: fg(Color::Blue),
            spark: fg(Color::Rgb(0, 120, 0)),
            running: fg(Color::Rgb(0, 130, 0)).add_modifier(Modifier::BOLD),
            running_quiet: fg(Color::Blue),
            waiting: fg(Color::Rgb(160, 100, 0)).add_modifier(Modifier::BOLD),
            done: fg(Color::Rgb(0, 130, 0)),
            closed: fg(grey),
            pending: fg(grey),
            stalled: fg(Color::Rgb(160, 100, 0)),
            ..Self::dark()
        }
    }

    /// `NO_COLOR` (no-color.org): modifiers only. Every status keeps its glyph and word.
    pub fn no_color() -> Self {
        let plain = Style::new();
        let bold = Style::new().add_modifier(Modifier::BOLD);
        let dim = Style::new().add_modifier(Modifier::DIM);
        Self {
            name: "no-color",
            base: plain,
            dim,
            bold,
            title: bold,
            border: plain,
            border_focus: bold,
            selected: Style::new().add_modifier(Modifier::REVERSED),
            selected_idle: Style::new().add_modifier(Modifier::UNDERLINED),
            header: plain,
            brand: bold,
            key: bold,
            warn: bold,
            error: bold,
            cost: plain,
            model: plain,
            user: bold,
            reasoning: dim.add_modifier(Modifier::ITALIC),
            command: bold,
            output: plain,
            diff_add: plain,
            diff_del: plain,
            tool: plain,
            gauge: plain,
            spark: plain,
            running: bold,
            running_quiet: plain,
            waiting: bold,
            retrying: bold,
            done: plain,
            failed: bold,
            interrupted: bold,
            closed: dim,
            pending: dim,
            stalled: bold,
            search: Style::new().add_modifier(Modifier::REVERSED),
        }
    }

    pub fn status(&self, shown: Shown) -> Style {
        match shown {
            Shown::Is(Status::Pending) => self.pending,
            Shown::Is(Status::Running) => self.running,
            Shown::Is(Status::Waiting) | Shown::NeedsYou(_) => self.waiting,
            Shown::OnChildren(_) => self.running_quiet,
            Shown::Is(Status::Retrying) => self.retrying,
            Shown::Is(Status::Idle) | Shown::Done => self.done,
            Shown::Is(Status::Failed) => self.failed,
            Shown::Is(Status::Interrupted) | Shown::Unfinished => self.interrupted,
            Shown::Is(Status::Closed) => self.closed,
            Shown::Stalled => self.stalled,
        }
    }
}
