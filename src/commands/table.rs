//! The text tables of `ps`, `history`, `report` and `search`, fitted to their terminal as `ps`
//! fits its COMMAND: when a table is wider than the terminal, the longest columns give way first
//! (a path keeps its last folders, an id its tail, a name its start), each down to a floor; when
//! even that does not fit, the least telling columns leave. A pipe gets every column whole: one
//! line a row, columns apart by two spaces, so that the table stays a table for `awk` and `cut`.

use std::fmt::Write as _;

use unicode_width::UnicodeWidthChar as _;

use crate::ui::text::{truncate, width};

/// Widest session name printed, terminal or not: a first prompt can be a page long.
pub const NAME_WIDTH: usize = 48;

/// Columns apart by two spaces, or by one (as `ps` does) when two would cost a column and no
/// header is two words.
const GAP: usize = 2;
const TIGHT_GAP: usize = 1;

/// How a cell too wide for its column is cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// Never: the column is shown whole or not at all.
    Never,
    /// Its start is kept (a name reads from its start).
    Tail,
    /// Its end is kept (a path's last folders, an id's tail, which tells rows apart).
    Head,
}

/// One column: its header, its alignment, how it gives way and when it leaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spec {
    pub header: &'static str,
    /// Figures align right, words left.
    pub right: bool,
    pub cut: Cut,
    /// The fewest columns a cut leaves it (never below its header).
    pub floor: usize,
    /// Which columns leave first when even cut to their floors the table does not fit: the
    /// lower, the sooner.
    pub keep: u8,
}

impl Spec {
    /// A figure: right-aligned, never cut.
    pub const fn figure(header: &'static str, keep: u8) -> Self {
        Self { header, right: true, cut: Cut::Never, floor: 0, keep }
    }

    /// A word: left-aligned, never cut.
    pub const fn word(header: &'static str, keep: u8) -> Self {
        Self { header, right: false, cut: Cut::Never, floor: 0, keep }
    }

    /// A word that gives way when the table is too wide, down to `floor` columns.
    #[must_use]
    pub const fn cut(self, cut: Cut, floor: usize) -> Self {
        Self { cut, floor, ..self }
    }
}

/// The table of `rows` (cells in `specs`' order) under its header, fitted to `limit` columns.
pub fn render(specs: &[Spec], rows: &[Vec<String>], limit: Option<usize>) -> String {
    let mut widths: Vec<usize> = specs
        .iter()
        .enumerate()
        .map(|(i, c)| rows.iter().map(|r| width(&r[i])).chain([width(c.header)]).max().unwrap_or(0))
        .collect();
    let mut shown = vec![true; specs.len()];
    let gap = match limit {
        Some(limit) => fit(specs, rows, &mut widths, &mut shown, limit),
        None => GAP,
    };
    let sep = " ".repeat(gap);
    let mut out = String::new();
    let header: Vec<String> = specs.iter().map(|c| c.header.to_owned()).collect();
    for cells in std::iter::once(&header).chain(rows) {
        let mut line = String::new();
        for (i, c) in specs.iter().enumerate().filter(|(i, _)| shown[*i]) {
            let cell = cut(&cells[i], widths[i], c.cut);
            let pad = " ".repeat(widths[i].saturating_sub(width(&cell)));
            let _ = if c.right { write!(line, "{pad}{cell}{sep}") } else { write!(line, "{cell}{pad}{sep}") };
        }
        let line = line.trim_end();
        // Nothing left to give way (a terminal narrower than the columns that stay): cut at the edge.
        let line = match limit {
            Some(l) if width(line) > l => truncate(line, l),
            _ => line.to_owned(),
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// Chooses the columns shown, their widths and the gap between them so that a row fits `limit`.
fn fit(specs: &[Spec], rows: &[Vec<String>], widths: &mut [usize], shown: &mut [bool], limit: usize) -> usize {
    // A column with nothing in any row (a process column when no process runs) says nothing: it
    // goes before anything is cut.
    let vacant = |i: usize| !rows.is_empty() && rows.iter().all(|r| matches!(r[i].as_str(), "-" | ""));
    if total(widths, shown, GAP) > limit {
        for i in (0..specs.len()).filter(|&i| vacant(i)) {
            shown[i] = false;
        }
    }
    let floors: Vec<usize> = specs
        .iter()
        .zip(widths.iter())
        .map(|(c, &w)| match c.cut {
            Cut::Never => w,
            _ => w.min(c.floor.max(width(c.header))),
        })
        .collect();
    let least = |shown: &[bool], gap: usize| {
        (0..specs.len()).filter(|&i| shown[i]).map(|i| floors[i] + gap).sum::<usize>().saturating_sub(gap)
    };
    // One space cannot part headers of two words (`SUB-AGENT TOKENS SUB-AGENT COST`).
    let spaced = (0..specs.len()).any(|i| shown[i] && specs[i].header.contains(' '));
    let gap = if spaced || least(shown, GAP) <= limit { GAP } else { TIGHT_GAP };
    // Columns leave, least telling first, until the rest fits at their floors; then those that
    // left and fit in what is left come back, most telling first.
    let mut left = Vec::new();
    while least(shown, gap) > limit && shown.iter().filter(|s| **s).count() > 1 {
        let out = (0..specs.len()).filter(|&i| shown[i]).min_by_key(|&i| specs[i].keep);
        if let Some(i) = out {
            shown[i] = false;
            left.push(i);
        }
    }
    for &i in left.iter().rev() {
        shown[i] = true;
        shown[i] = least(shown, gap) <= limit;
    }
    // Fewer columns may fit two spaces apart after all.
    let gap = if least(shown, GAP) <= limit { GAP } else { gap };
    // The widest column that can give way gives way, down to the next widest or its floor, until
    // the table fits: a path no longer keeps 50 of 80 columns while the figures go.
    while total(widths, shown, gap) > limit {
        let over = total(widths, shown, gap) - limit;
        let mut cuttable: Vec<usize> = (0..specs.len()).filter(|&i| shown[i] && widths[i] > floors[i]).collect();
        cuttable.sort_by_key(|&i| std::cmp::Reverse(widths[i]));
        let Some(&widest) = cuttable.first() else { break };
        let next = cuttable.get(1).map_or(0, |&i| widths[i]);
        let down_to = floors[widest].max(next).max(widths[widest].saturating_sub(over));
        // Ties give way one column at a time, in turn.
        widths[widest] = down_to.min(widths[widest] - 1);
    }
    gap
}

/// The width of the terminal stdout is (`COLUMNS` first, as `ps` reads it); `None` when stdout
/// is no terminal: a pipe or a file gets every column whole.
pub fn terminal_width() -> Option<usize> {
    use std::io::IsTerminal as _;
    if !std::io::stdout().is_terminal() {
        return None;
    }
    let columns = std::env::var("COLUMNS").ok().and_then(|c| c.trim().parse::<usize>().ok()).filter(|&c| c > 0);
    columns.or_else(|| crossterm::terminal::size().ok().map(|(w, _)| usize::from(w)).filter(|&w| w > 0))
}

fn total(widths: &[usize], shown: &[bool], gap: usize) -> usize {
    widths.iter().zip(shown).filter(|(_, s)| **s).map(|(w, _)| w + gap).sum::<usize>().saturating_sub(gap)
}

/// `cell` in at most `cols` columns, cut as its column cuts.
fn cut(cell: &str, cols: usize, how: Cut) -> String {
    if width(cell) <= cols {
        return cell.to_owned();
    }
    match how {
        Cut::Head => keep_end(cell, cols),
        Cut::Tail | Cut::Never => truncate(cell, cols),
    }
}

/// `…` and the end of `s`, in `cols` columns.
fn keep_end(s: &str, cols: usize) -> String {
    if cols == 0 {
        return String::new();
    }
    let mut tail: Vec<char> = Vec::new();
    let mut used = 0;
    for c in s.chars().rev() {
        let w = c.width().unwrap_or(0);
        if used + w > cols - 1 {
            break;
        }
        used += w;
        tail.push(c);
    }
    std::iter::once('…').chain(tail.into_iter().rev()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_narrow_terminal_cuts_the_longest_column_then_drops_the_least_telling() {
        let specs = [Spec::word("NAME", 9).cut(Cut::Tail, 12), Spec::figure("A", 0), Spec::figure("B", 5)];
        let rows = vec![vec!["a-rather-long-project-name".to_owned(), "1,000".to_owned(), "$2.00".to_owned()]];
        let wide = render(&specs, &rows, None);
        assert_eq!(wide.lines().nth(1), Some("a-rather-long-project-name  1,000  $2.00"));
        let cut = render(&specs, &rows, Some(30));
        assert!(cut.lines().all(|l| width(l) <= 30) && cut.contains("1,000"), "the name gave way first: {cut}");
        let narrow = render(&specs, &rows, Some(20));
        assert!(narrow.lines().all(|l| width(l) <= 20), "{narrow}");
        assert!(!narrow.contains("1,000") && narrow.contains("$2.00"), "column A went first: {narrow}");
    }

    #[test]
    fn a_column_that_left_comes_back_when_it_fits_after_a_wider_one_left() {
        let specs = [Spec::word("WHEN", 9), Spec::figure("N", 0), Spec::word("NAME", 1).cut(Cut::Tail, 12)];
        let rows = vec![vec!["2026-12-02".to_owned(), "7".to_owned(), "a-rather-long-name".to_owned()]];
        let text = render(&specs, &rows, Some(20));
        assert_eq!(text.lines().nth(1), Some("2026-12-02  7"), "N left first, NAME did not fit, N came back: {text}");
    }

    #[test]
    fn a_column_with_nothing_in_it_goes_before_anything_is_cut() {
        let specs = [Spec::word("NAME", 9).cut(Cut::Tail, 4), Spec::figure("PID", 5)];
        let rows = vec![vec!["a-long-name".to_owned(), "-".to_owned()]];
        let text = render(&specs, &rows, Some(12));
        assert_eq!(text.lines().nth(1), Some("a-long-name"), "{text}");
    }
}
