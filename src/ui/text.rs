//! Formatting and wrapping of what the screen prints: compact figures, clocks, and text wrapped
//! to a width from its end backwards, so a lane's tail costs what is visible, not its history.

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use crate::model::prices::Pico;
use crate::model::{Thread, format_usd};

/// Tokens the way htop prints memory: `942`, `11.5k`, `2.4M`.
pub fn tokens(n: u64) -> String {
    match n {
        0..=999 => n.to_string(),
        1_000..=99_949 => format!("{:.1}k", n as f64 / 1e3),
        100_000..=999_499 => format!("{}k", (n + 500) / 1000),
        1_000_000..=99_949_999 => format!("{:.1}M", n as f64 / 1e6),
        // Token counts come from the input: 2^64-1 must print, not overflow.
        _ => format!("{}M", n.saturating_add(500_000) / 1_000_000),
    }
}

/// A count with thousands separators: `2,418`.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Elapsed time as `0:42`, `12:05`, `1:02:03`.
pub fn duration(ms: i64) -> String {
    let s = ms.max(0) / 1000;
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60)
    } else {
        format!("{}:{:02}", s / 60, s % 60)
    }
}

/// A quiet spell in the largest unit that fits: `12s`, `4m`, `2h`.
pub fn quiet(ms: i64) -> String {
    let s = ms.max(0) / 1000;
    match s {
        0..=99 => format!("{s}s"),
        100..=5999 => format!("{}m", s / 60),
        _ => format!("{}h", s / 3600),
    }
}

/// Wall clock of a unix-ms instant, UTC: `21:44:07`.
pub fn clock(ms: i64) -> String {
    let s = ms.div_euclid(1000).rem_euclid(86_400);
    format!("{:02}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60)
}

/// Model names without the vendor prefix every row would repeat, nor the release date that
/// names the same model: `gpt-5.6-luna` → `5.6-luna`, `claude-sonnet-4-5-20250929` → `sonnet-4-5`.
pub fn short_model<'a>(model: &'a str) -> &'a str {
    let strip = |m: &'a str, prefixes: &[&str]| {
        prefixes.iter().find_map(|p| m.strip_prefix(p)).filter(|rest| !rest.is_empty()).unwrap_or(m)
    };
    // A provider's id names the vendor's (OpenCode: `anthropic/claude-sonnet-4-5`).
    let short = strip(strip(model, &["openai/", "anthropic/"]), &["gpt-", "claude-"]);
    crate::model::prices::strip_date(short).unwrap_or(short)
}

/// Shell wrappers hide the command a person typed: `/bin/bash -lc 'cargo test'` → `cargo test`.
pub fn short_command(cmd: &str) -> &str {
    let cmd = cmd.trim();
    for shell in ["/bin/bash", "/usr/bin/bash", "bash", "/bin/zsh", "zsh", "/bin/sh", "sh"] {
        for flag in [" -lc ", " -c "] {
            if let Some(rest) = cmd.strip_prefix(shell).and_then(|r| r.strip_prefix(flag)) {
                let rest = rest.trim();
                return rest
                    .strip_prefix('\'')
                    .and_then(|r| r.strip_suffix('\''))
                    .or_else(|| rest.strip_prefix('"').and_then(|r| r.strip_suffix('"')))
                    .unwrap_or(rest);
            }
        }
    }
    cmd
}

/// Elapsed time of a thread: first line to last, or to now while it is still active.
pub fn elapsed(t: &Thread, now_ms: Option<i64>) -> Option<i64> {
    let first = t.first_ms?;
    let end = if t.status.is_active() { now_ms.or(t.last_ms)? } else { t.last_ms? };
    Some(end.saturating_sub(first))
}

pub fn width(s: &str) -> usize {
    UnicodeWidthStr::width(s)
}

/// `s` cut to `max` columns, with `…` when something was cut.
pub fn truncate(s: &str, max: usize) -> String {
    if width(s) <= max {
        return s.to_owned();
    }
    if max == 0 {
        return String::new();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars() {
        let w = c.width().unwrap_or(0);
        if used + w > max - 1 {
            break;
        }
        used += w;
        out.push(c);
    }
    out.push('…');
    out
}

/// `s` cut to `max` columns in its middle, its start and its end kept (`List f…es (B)`): for names
/// that differ only at their end.
pub fn truncate_middle(s: &str, max: usize) -> String {
    if width(s) <= max || max < 5 {
        return truncate(s, max);
    }
    let tail_w = (max - 1) / 2;
    let head = truncate(s, max - tail_w);
    let mut tail: Vec<char> = Vec::new();
    let mut used = 0;
    for c in s.chars().rev() {
        let w = c.width().unwrap_or(0);
        if used + w > tail_w {
            break;
        }
        used += w;
        tail.push(c);
    }
    head + &tail.into_iter().rev().collect::<String>()
}

/// `s` padded with spaces (or cut) to exactly `cols` columns.
pub fn fit(s: &str, cols: usize) -> String {
    let mut out = truncate(s, cols);
    let w = width(&out);
    out.extend(std::iter::repeat_n(' ', cols.saturating_sub(w)));
    out
}

/// `s` right-aligned in `cols` columns.
pub fn right(s: &str, cols: usize) -> String {
    let cut = truncate(s, cols);
    let w = width(&cut);
    let mut out: String = std::iter::repeat_n(' ', cols.saturating_sub(w)).collect();
    out.push_str(&cut);
    out
}

/// Tabs take a fixed width: the terminal's own tab stops would not line up inside a pane.
const TAB: &str = "    ";

/// Wraps one logical line (no `\n`) at word boundaries to `width` columns; words longer than a
/// row are broken. Tabs become four spaces.
pub fn wrap_line(line: &str, width: usize, out: &mut Vec<String>) {
    let width = width.max(1);
    let mut row = String::new();
    let mut row_w = 0;
    let line = line.trim_end();
    if line.is_empty() {
        out.push(String::new());
        return;
    }
    let expanded;
    let line = if line.contains('\t') {
        expanded = line.replace('\t', TAB);
        expanded.as_str()
    } else {
        line
    };
    for word in line.split_inclusive(' ') {
        let ww = UnicodeWidthStr::width(word);
        let bare = UnicodeWidthStr::width(word.trim_end_matches(' '));
        if row_w + bare > width && row_w > 0 {
            out.push(std::mem::take(&mut row).trim_end().to_owned());
            row_w = 0;
        }
        if bare > width {
            // Hard-break a word longer than a whole row.
            for c in word.chars() {
                let cw = c.width().unwrap_or(0);
                if row_w + cw > width {
                    out.push(std::mem::take(&mut row));
                    row_w = 0;
                }
                row.push(c);
                row_w += cw;
            }
            continue;
        }
        row.push_str(word);
        row_w += ww;
    }
    if !row.trim_end().is_empty() || out.is_empty() {
        out.push(row.trim_end().to_owned());
    }
}

/// The first `max_rows` rows of `text` wrapped to `width` as one paragraph (its line breaks and
/// runs of blanks read as one space), the last ending in `…` when some was left out: for a text
/// whose start says the most (a failure's reason) in a place of bounded height. Only the text that
/// can show is read, whatever its length.
pub fn wrap_head(text: &str, width: usize, max_rows: usize) -> Vec<String> {
    let width = width.max(1);
    let mut rows = Vec::new();
    if max_rows == 0 {
        return rows;
    }
    // Bytes enough for one row more than asked, at 4 bytes a column (the longest UTF-8 char):
    // past it the text cannot show, and rows past `max_rows` say that it was cut.
    let budget = (max_rows + 1) * width * 4;
    let (mut flat, mut cut) = (String::new(), false);
    for word in text.split_whitespace() {
        let room = budget.saturating_sub(flat.len());
        if room == 0 {
            cut = true;
            break;
        }
        if !flat.is_empty() {
            flat.push(' ');
        }
        let mut end = word.len().min(room);
        while !word.is_char_boundary(end) {
            end -= 1;
        }
        flat.push_str(&word[..end]);
        cut |= end < word.len();
    }
    wrap_line(&flat, width, &mut rows);
    if rows.len() > max_rows || cut {
        rows.truncate(max_rows);
        if let Some(last) = rows.last_mut() {
            *last = truncate(&format!("{last}…"), width);
        }
    }
    rows
}

/// The last `max_rows` rows of `text` wrapped to `width`, in reading order, and whether rows
/// before them were left out. Walks logical lines from the end, so the cost is bounded by the
/// rows asked for, whatever the length of `text`.
pub fn wrap_tail(text: &str, width: usize, max_rows: usize) -> (Vec<String>, bool) {
    wrap_tail_with(text, width, max_rows, wrap_line)
}

/// [`wrap_tail`] of Markdown: list items keep their bullet alone on the left, wrapped rows
/// hang under the item's text (the inline marks are styled later, row by row).
pub fn wrap_tail_markdown(text: &str, width: usize, max_rows: usize) -> (Vec<String>, bool) {
    wrap_tail_with(text, width, max_rows, wrap_markdown_line)
}

/// A list item's lead as it prints (`• `, `  • `, `3. `) and the item's text.
fn list_lead(line: &str) -> Option<(String, &str)> {
    let trimmed = line.trim_start_matches(' ');
    let indent = " ".repeat(line.len() - trimmed.len());
    if let Some(rest) = trimmed.strip_prefix("- ").or_else(|| trimmed.strip_prefix("* ")) {
        return Some((format!("{indent}• "), rest));
    }
    let digits = trimmed.bytes().take_while(u8::is_ascii_digit).count();
    if (1..=3).contains(&digits) && trimmed[digits..].starts_with(". ") {
        return Some((format!("{indent}{} ", &trimmed[..=digits]), &trimmed[digits + 2..]));
    }
    None
}

/// One Markdown line wrapped: a list item with a hanging indent, anything else as [`wrap_line`].
pub fn wrap_markdown_line(line: &str, width: usize, out: &mut Vec<String>) {
    let Some((lead, rest)) = list_lead(line) else {
        wrap_line(line, width, out);
        return;
    };
    let lead_w = UnicodeWidthStr::width(lead.as_str());
    let mut rows = Vec::new();
    wrap_line(rest, width.saturating_sub(lead_w).max(1), &mut rows);
    let pad = " ".repeat(lead_w);
    for (k, row) in rows.into_iter().enumerate() {
        out.push(if k == 0 { format!("{lead}{row}") } else { format!("{pad}{row}") });
    }
}

fn wrap_tail_with(
    text: &str,
    width: usize,
    max_rows: usize,
    wrap: fn(&str, usize, &mut Vec<String>),
) -> (Vec<String>, bool) {
    let width = width.max(1);
    let text = text.trim_end_matches(['\n', ' ']);
    let mut rows: Vec<String> = Vec::new();
    if max_rows == 0 || text.is_empty() {
        return (rows, !text.is_empty());
    }
    // Bytes of one logical line worth wrapping: enough for every row asked for, at 4 bytes a
    // column (the longest UTF-8 char), with a margin. A longer line (a minified file, a base64
    // blob) is wrapped from its tail only.
    let budget = (max_rows + 1) * width * 4;
    let mut rest = text;
    let mut more = false;
    loop {
        let (head, line) = match memchr::memrchr(b'\n', rest.as_bytes()) {
            Some(i) => (Some(&rest[..i]), &rest[i + 1..]),
            None => (None, rest),
        };
        let mut cut = line.len().saturating_sub(budget);
        while !line.is_char_boundary(cut) {
            cut += 1;
        }
        let mut piece = Vec::new();
        wrap(&line[cut..], width, &mut piece);
        let need = max_rows - rows.len();
        if piece.len() > need {
            piece.drain(..piece.len() - need);
            more = true;
        }
        piece.append(&mut rows);
        rows = piece;
        if rows.len() >= max_rows {
            more |= head.is_some() || cut > 0;
            break;
        }
        match head {
            Some(h) => rest = h,
            None => break,
        }
    }
    (rows, more)
}

/// `cost` and its `mark` in `room` columns: as everywhere else when it fits, else shortened the
/// way a reader still reads the amount (`$.0008*` for `$0.0008*`, `$1235` for `$1234.56`), and cut
/// only when even that does not fit. A cut `$0.000…` hid the very digit that mattered.
pub fn cost_text(cost: Option<Pico>, mark: &str, room: usize) -> String {
    let full = format!("{}{mark}", format_usd(cost));
    if width(&full) <= room {
        return full;
    }
    let Some(usd) = cost.map(Pico::usd) else { return truncate(&full, room) };
    let short = if usd.abs() < 1.0 {
        format!("{}{mark}", format_usd(cost).replacen("$0.", "$.", 1))
    } else {
        format!("${usd:.0}{mark}")
    };
    truncate(&short, room)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_is_one_paragraph_cut_with_an_ellipsis() {
        assert_eq!(wrap_head("short", 10, 2), vec!["short"]);
        assert_eq!(wrap_head("one two\nthree\tfour", 9, 2), vec!["one two", "three…"]);
        assert_eq!(wrap_head("one two\nthree\tfour", 20, 2), vec!["one two three four"]);
        assert_eq!(wrap_head("anything", 10, 0), Vec::<String>::new());
        // A word longer than all the rows shown is read only as far as it can show.
        let rows = wrap_head(&"x".repeat(1_000_000), 8, 2);
        assert_eq!(rows, vec!["x".repeat(8), format!("{}…", "x".repeat(7))]);
    }

    #[test]
    fn figures_read_like_htop() {
        assert_eq!(tokens(942), "942");
        assert_eq!(tokens(11_522), "11.5k");
        assert_eq!(tokens(412_000), "412k");
        assert_eq!(tokens(2_400_000), "2.4M");
        assert_eq!(grouped(2418), "2,418");
        assert_eq!(grouped(999), "999");
        assert_eq!(duration(42_000), "0:42");
        assert_eq!(duration(3_723_000), "1:02:03");
        assert_eq!(clock(1_795_987_208_511), "21:20:08");
        assert_eq!(clock(0), "00:00:00");
        assert_eq!(short_model("gpt-5.6-luna"), "5.6-luna");
        assert_eq!(short_model("claude-sonnet-4-5-20250929"), "sonnet-4-5");
        assert_eq!(short_model("gpt-4.1-2025-04-14"), "4.1");
        assert_eq!(short_model("anthropic/claude-haiku-4-5"), "haiku-4-5");
        assert_eq!(short_command("/bin/bash -lc 'echo hi'"), "echo hi");
    }

    #[test]
    fn a_middle_cut_keeps_both_ends_within_the_width() {
        assert_eq!(truncate_middle("List files (A)", 13), "List f…es (A)");
        assert_eq!(truncate_middle("List files (A)", 14), "List files (A)");
        assert_eq!(truncate_middle("日本語のテキスト長い", 9), "日本…長い");
        assert_eq!(truncate_middle("abcdefgh", 4), "abc…", "too narrow for two ends");
        for max in 0..20 {
            assert!(width(&truncate_middle("Survey the project (second half)", max)) <= max);
        }
    }

    #[test]
    fn wrap_breaks_words_and_long_runs() {
        let mut out = Vec::new();
        wrap_line("the quick brown fox", 9, &mut out);
        assert_eq!(out, ["the quick", "brown fox"]);
        out.clear();
        wrap_line("abcdefghij", 4, &mut out);
        assert_eq!(out, ["abcd", "efgh", "ij"]);
        out.clear();
        wrap_line("日本語のテキスト", 5, &mut out);
        assert!(out.iter().all(|r| width(r) <= 5), "{out:?}");
    }

    #[test]
    fn tail_is_bounded_by_rows_not_text() {
        let text = "line\n".repeat(100_000);
        let (rows, more) = wrap_tail(&text, 20, 3);
        assert_eq!(rows, ["line", "line", "line"]);
        assert!(more);
        let huge = "x".repeat(1 << 20);
        let (rows, more) = wrap_tail(&huge, 10, 2);
        assert_eq!(rows.len(), 2);
        assert!(more);
        let (rows, more) = wrap_tail("a\nb", 10, 5);
        assert_eq!(rows, ["a", "b"]);
        assert!(!more);
    }

    #[test]
    fn wrapped_list_items_hang_under_their_text() {
        let mut out = Vec::new();
        wrap_markdown_line("- one two three four", 10, &mut out);
        assert_eq!(out, ["• one two", "  three", "  four"]);
        out.clear();
        wrap_markdown_line("12. alpha beta", 9, &mut out);
        assert_eq!(out, ["12. alpha", "    beta"]);
        out.clear();
        wrap_markdown_line("-not a list", 20, &mut out);
        assert_eq!(out, ["-not a list"]);
    }

    #[test]
    fn truncation_marks_the_cut() {
        assert_eq!(truncate("Schrodinger", 6), "Schro…");
        assert_eq!(fit("ab", 4), "ab  ");
        assert_eq!(right("ab", 4), "  ab");
    }

    use crate::model::prices::Pico;

    fn usd(text: &str) -> Option<Pico> {
        Pico::parse_usd(text)
    }

    #[test]
    fn a_cost_keeps_its_digits_in_the_narrow_column() {
        assert_eq!(cost_text(usd("0.0076"), "", 7), "$0.0076");
        assert_eq!(cost_text(usd("0.0008"), "*", 7), "$.0008*");
        assert_eq!(cost_text(usd("0.25"), "*", 7), "$0.25*");
        assert_eq!(cost_text(usd("1234.56"), "", 7), "$1235");
        assert_eq!(cost_text(usd("99.5"), "*", 7), "$99.50*");
        assert_eq!(cost_text(None, "", 7), "—");
        assert_eq!(cost_text(usd("123456789.0"), "", 7), "$12345…");
    }
}
