//! `ps`'s text table, fitted to its terminal as `ps` fits its COMMAND: when the table is wider than
//! the terminal, the longest columns give way first (a path keeps its last folders, an id its tail,
//! a name its start), each down to a floor; when even that does not fit, the least telling columns
//! leave ([`Column::keep_rank`]). A pipe gets every chosen column whole: one line a session,
//! columns apart by two spaces, the name last.

use std::fmt::Write as _;

use unicode_width::UnicodeWidthChar as _;

use super::columns::{Column, Cut};
use crate::ui::text::{truncate, width};

/// Widest session name printed, terminal or not: a first prompt can be a page long.
pub const NAME_WIDTH: usize = 48;
/// Columns apart by two spaces, or by one (as `ps` does) when two would cost a column.
const GAP: usize = 2;
const TIGHT_GAP: usize = 1;

/// The table of `rows` (cells in `columns`' order) under its header, fitted to `limit` columns.
pub fn render(columns: &[Column], rows: &[Vec<String>], limit: Option<usize>) -> String {
    let mut widths: Vec<usize> = columns
        .iter()
        .enumerate()
        .map(|(i, c)| rows.iter().map(|r| width(&r[i])).chain([c.header().len()]).max().unwrap_or(0))
        .collect();
    let mut shown = vec![true; columns.len()];
    let gap = match limit {
        Some(limit) => fit(columns, rows, &mut widths, &mut shown, limit),
        None => GAP,
    };
    let sep = " ".repeat(gap);
    let mut out = String::new();
    let header: Vec<String> = columns.iter().map(|c| c.header().to_owned()).collect();
    for cells in std::iter::once(&header).chain(rows) {
        let mut line = String::new();
        for (i, c) in columns.iter().enumerate().filter(|(i, _)| shown[*i]) {
            let cell = cut(&cells[i], widths[i], c.cut().0);
            let pad = " ".repeat(widths[i].saturating_sub(width(&cell)));
            let _ = if c.right_aligned() { write!(line, "{pad}{cell}{sep}") } else { write!(line, "{cell}{pad}{sep}") };
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
fn fit(columns: &[Column], rows: &[Vec<String>], widths: &mut [usize], shown: &mut [bool], limit: usize) -> usize {
    // A process column with no process in any row says nothing: it goes before anything is cut.
    let process = |c: Column| matches!(c, Column::Pid | Column::Cpu | Column::Mem);
    let idle: Vec<usize> =
        (0..columns.len()).filter(|&i| process(columns[i]) && rows.iter().all(|r| r[i] == "-")).collect();
    if total(widths, shown, GAP) > limit {
        for i in idle {
            shown[i] = false;
        }
    }
    // Each column's fewest columns: its whole width when it is never cut.
    let floors: Vec<usize> = (0..columns.len())
        .map(|i| match columns[i].cut() {
            (Cut::Never, _) => widths[i],
            (_, least) => widths[i].min(least.max(columns[i].header().len())),
        })
        .collect();
    let floor = |i: usize| floors[i];
    let least = |shown: &[bool], gap: usize| {
        (0..columns.len()).filter(|&i| shown[i]).map(|i| floor(i) + gap).sum::<usize>().saturating_sub(gap)
    };
    let gap = if least(shown, GAP) <= limit { GAP } else { TIGHT_GAP };
    // Columns leave, least telling first, until the rest fits at their floors.
    loop {
        if least(shown, gap) <= limit || shown.iter().filter(|s| **s).count() <= 1 {
            break;
        }
        let out = (0..columns.len()).filter(|&i| shown[i]).min_by_key(|&i| columns[i].keep_rank());
        if let Some(i) = out {
            shown[i] = false;
        }
    }
    // The widest column that can give way gives way, down to the next widest or its floor, until
    // the table fits: PROJECT no longer keeps 50 of 80 columns while the figures go.
    while total(widths, shown, gap) > limit {
        let over = total(widths, shown, gap) - limit;
        let mut cuttable: Vec<usize> = (0..columns.len()).filter(|&i| shown[i] && widths[i] > floor(i)).collect();
        cuttable.sort_by_key(|&i| std::cmp::Reverse(widths[i]));
        let Some(&widest) = cuttable.first() else { break };
        let next = cuttable.get(1).map_or(0, |&i| widths[i]);
        let down_to = floor(widest).max(next).max(widths[widest].saturating_sub(over));
        // Ties give way one column at a time, in turn.
        widths[widest] = down_to.min(widths[widest] - 1);
    }
    gap
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
    use crate::commands::ps::columns::DEFAULT;

    fn row(project: &str, name: &str, pid: &str) -> Vec<String> {
        let cells = [
            "claude",
            "4d5611e5-241a-462a-8d15-5122611a9569",
            project,
            "live",
            "3s",
            pid,
            "12.4",
            "181.0M",
            "2",
            "1,234,567",
            "$12.34",
            name,
        ];
        cells.iter().map(|c| (*c).to_owned()).collect()
    }

    /// At 80 columns a long project gives way before any figure: agents, tokens and cost stay.
    #[test]
    fn the_longest_column_gives_way_first() {
        let project = "~/src/work/clients/acme/platform/services/billing-reconciliation-worker";
        let rows = vec![row(project, "Fix the flaky reconciliation test in the nightly job", "4121")];
        let text = render(&DEFAULT, &rows, Some(80));
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines.iter().all(|l| width(l) <= 80), "{text}");
        for col in ["AGENT", "ID", "PROJECT", "STATE", "AGENTS", "TOKENS", "COST", "NAME"] {
            assert!(lines[0].contains(col), "{col} at 80 columns:\n{text}");
        }
        assert!(lines[1].contains("1,234,567") && lines[1].contains("$12.34"), "{text}");
        let id = lines[1].split_whitespace().nth(1).unwrap();
        assert!(
            id.starts_with('…') && id.len() < 36 && "4d5611e5-241a-462a-8d15-5122611a9569".ends_with(&id[3..]),
            "{text}"
        );
        assert!(lines[0].contains("PID"), "a live session's pid stays at 80 columns: {text}");
        assert!(lines[1].contains("worker"), "a path keeps its last folder: {text}");
        // Piped: whole.
        let piped = render(&DEFAULT, &rows, None);
        assert!(piped.contains(project) && piped.contains("4d5611e5-241a-462a-8d15-5122611a9569"), "{piped}");
    }

    #[test]
    fn a_narrow_terminal_drops_the_least_telling_columns() {
        let rows = vec![row("~/p", "name", "4121")];
        let text = render(&DEFAULT, &rows, Some(50));
        assert!(text.lines().all(|l| width(l) <= 50), "{text}");
        let header = text.lines().next().unwrap();
        assert!(header.contains("COST") && header.contains("STATE") && !header.contains("CPU%"), "{text}");
    }
}
