//! How much text the store keeps. An agent's files are mostly text (tool output, file contents
//! read back, the same context sent again), and the store must stay a fraction of them: each
//! piece is capped here, and the backend keeps each distinct piece once.

/// A brief or a final answer: what was asked and what came back, kept long enough to read.
pub const BRIEF: usize = 8 << 10;
/// One item's text: enough to find it and to recognise it.
pub const ITEM: usize = 2 << 10;
/// One item's title (a command, a tool and its argument).
pub const TITLE: usize = 256;
/// Files changed listed per run.
pub const FILES: usize = 256;
/// Threads an item names, kept per item (a wait on a whole fleet names every agent of it).
pub const RECEIVERS: usize = 256;

/// The first `max` bytes of `text` (on a character boundary), and whether anything was cut.
pub fn capped(text: &str, max: usize) -> (&str, bool) {
    if text.len() <= max {
        return (text, false);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (&text[..end], true)
}

/// [`capped`], as an owned string with `…` where it was cut.
pub fn cap(text: &str, max: usize) -> String {
    match capped(text, max) {
        (kept, false) => kept.to_owned(),
        (kept, true) => format!("{kept}…"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_on_a_character_boundary() {
        assert_eq!(cap("abc", 3), "abc");
        assert_eq!(cap("abcd", 3), "abc…");
        // 'é' is two bytes: a cut in its middle keeps it out whole.
        assert_eq!(cap("aé", 2), "a…");
        assert_eq!(capped("", 0), ("", false));
    }
}
